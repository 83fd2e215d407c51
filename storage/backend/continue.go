// This file holds the continue token of paginated lists, in the format
// k8s.io/apiserver uses so that tokens look the same to clients.

package backend

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"strings"

	"github.com/annexapi/annex/storage"
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
// read at revision rev. rev 0 makes an inconsistent token, one that
// continues at the latest revision (written as -1 inside the token, as
// Kubernetes does).
func EncodeContinue(key, prefixRange string, rev uint64) (string, error) {
	if !strings.HasPrefix(key, prefixRange) {
		return "", &storage.Error{Err: storage.ErrInvalidKey, Key: key, Msg: "not under " + prefixRange}
	}
	if rev > math.MaxInt64 {
		return "", &storage.Error{Err: storage.ErrInvalidResourceVersion, Msg: fmt.Sprintf("revision %d does not fit a continue token", rev)}
	}
	wire := int64(rev)
	if rev == 0 {
		wire = -1
	}
	b, err := json.Marshal(continueToken{APIVersion: continueVersion, ResourceVersion: wire, StartKey: key[len(prefixRange):]})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodeContinue returns the start key (absolute, under prefixRange) and the
// revision of a continue token: 0 for an inconsistent token, which continues
// at the latest revision. A malformed token, or one whose start key would
// leave prefixRange, fails with storage.ErrInvalidContinue.
func DecodeContinue(token, prefixRange string) (startKey string, rev uint64, err error) {
	invalid := func(msg string) (string, uint64, error) {
		return "", 0, &storage.Error{Err: storage.ErrInvalidContinue, Msg: "continue key is not valid: " + msg}
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
	if c.ResourceVersion == -1 {
		return prefixRange + key[1:], 0, nil
	}
	return prefixRange + key[1:], uint64(c.ResourceVersion), nil
}
