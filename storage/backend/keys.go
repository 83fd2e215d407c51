// This file holds what a valid key is, the range a prefix matches, and the
// parsing of the resource version strings that options carry.

package backend

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/annexapi/annex/storage"
)

// ValidateKey checks that key is an absolute slash-separated path with no
// empty, "." or ".." segment and no trailing slash. It fails with
// storage.ErrInvalidKey.
func ValidateKey(key string) error {
	if len(key) < 2 || key[0] != '/' || key[len(key)-1] == '/' {
		return &storage.Error{Err: storage.ErrInvalidKey, Key: key}
	}
	for seg := range strings.SplitSeq(key[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return &storage.Error{Err: storage.ErrInvalidKey, Key: key}
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

// ResourceVersion is a resource version string as options carry it, parsed.
type ResourceVersion struct {
	// Revision is N for "N"; 0 for "" and "0".
	Revision uint64
	// Unset is true for "".
	Unset bool
}

// ParseResourceVersion parses a resource version from options: "", "0", or
// a decimal revision. Anything else fails with
// storage.ErrInvalidResourceVersion.
func ParseResourceVersion(rv string) (ResourceVersion, error) {
	if rv == "" {
		return ResourceVersion{Unset: true}, nil
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return ResourceVersion{}, &storage.Error{Err: storage.ErrInvalidResourceVersion, Msg: fmt.Sprintf("invalid resource version %q", rv)}
	}
	return ResourceVersion{Revision: n}, nil
}
