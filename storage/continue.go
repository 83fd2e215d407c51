// This file holds the continue token of paginated lists, in the format
// k8s.io/apiserver uses so that tokens look the same to clients.

package storage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// continueToken is the JSON inside a continue token.
type continueToken struct {
	APIVersion string `json:"v"`
	// ResourceVersion is the revision of the first page, or -1 for an
	// inconsistent continuation at the latest revision.
	ResourceVersion int64 `json:"rv"`
	// StartKey is the first key of the next page, relative to the prefix.
	StartKey string `json:"start"`
}

const continueVersion = "meta.k8s.io/v1"

// EncodeContinue returns the token for a next page that starts at key (the
// last key returned plus "\x00") under prefixRange (as PrefixRange returns),
// read at revision rev; rev -1 makes an inconsistent token that continues at
// the latest revision.
func EncodeContinue(key, prefixRange string, rev int64) (string, error) {
	if !strings.HasPrefix(key, prefixRange) {
		return "", &Error{Err: ErrInvalidKey, Key: key, Msg: "not under " + prefixRange}
	}
	b, err := json.Marshal(continueToken{APIVersion: continueVersion, ResourceVersion: rev, StartKey: key[len(prefixRange):]})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodeContinue returns the start key (absolute, under prefixRange) and the
// revision of a continue token. A malformed token, or one whose start key
// would leave prefixRange, fails with ErrInvalidContinue.
func DecodeContinue(token, prefixRange string) (startKey string, rev int64, err error) {
	invalid := func(msg string) (string, int64, error) {
		return "", 0, &Error{Err: ErrInvalidContinue, Msg: "continue key is not valid: " + msg}
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return invalid(err.Error())
	}
	var c continueToken
	if err := json.Unmarshal(b, &c); err != nil {
		return invalid(err.Error())
	}
	if c.APIVersion != continueVersion {
		return invalid(fmt.Sprintf("got encoding version %q", c.APIVersion))
	}
	if c.ResourceVersion == 0 || c.ResourceVersion < -1 {
		return invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	if c.StartKey == "" {
		return invalid("encoded start key empty (version meta.k8s.io/v1)")
	}
	// Defend against path traversal: the cleaned start key must be the key
	// itself, so prefix+start can never range above prefix.
	key := c.StartKey
	if !strings.HasPrefix(key, "/") {
		key = "/" + key
	}
	if path.Clean(key) != key {
		return invalid(fmt.Sprintf("start key %q is not a clean path", c.StartKey))
	}
	return prefixRange + key[1:], c.ResourceVersion, nil
}
