// This file holds the key layout: how objects map to keys, and what a valid key is.

package storage

import "strings"

// ObjectKey is the key of an object: /<group>/<resource>/<namespace>/<name>,
// or /<group>/<resource>/<name> for a cluster-scoped object (empty
// namespace). The core group ("") is spelled "core".
func ObjectKey(group, resource, namespace, name string) string {
	return ResourcePrefix(group, resource, namespace) + "/" + name
}

// ResourcePrefix is the prefix that List and Watch take for every object of a
// resource (namespace "") or of one namespace of it.
func ResourcePrefix(group, resource, namespace string) string {
	if group == "" {
		group = "core"
	}
	p := "/" + group + "/" + resource
	if namespace != "" {
		p += "/" + namespace
	}
	return p
}

// ValidateKey checks that key is an absolute slash-separated path with no
// empty, "." or ".." segment and no trailing slash. It fails with ErrInvalidKey.
func ValidateKey(key string) error {
	if len(key) < 2 || key[0] != '/' || key[len(key)-1] == '/' {
		return &Error{Err: ErrInvalidKey, Key: key}
	}
	for _, seg := range strings.Split(key[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return &Error{Err: ErrInvalidKey, Key: key}
		}
	}
	return nil
}

// PrefixRange is the form of a prefix that List and Watch match against: the
// prefix with one trailing slash, so that /a/foo/ never matches /a/foobar.
// It validates prefix as ValidateKey does.
func PrefixRange(prefix string) (string, error) {
	if err := ValidateKey(strings.TrimSuffix(prefix, "/")); err != nil {
		return "", err
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return prefix, nil
}
