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
	// Remaining, in a consistent token of a list without a selector, is
	// how many objects there are from StartKey to the end of the prefix at
	// ResourceVersion, so that the next page can tell its
	// remainingItemCount without walking them. Not in kube's tokens (which
	// are opaque to clients); absent when unknown.
	Remaining *int64 `json:"rem,omitempty"`
}

const continueVersion = "meta.k8s.io/v1"

// EncodeContinue returns the token for a next page that starts at key (the
// last key returned plus "\x00") under prefixRange (as PrefixRange returns),
// read at revision rev. rev 0 makes an inconsistent token, one that
// continues at the latest revision (written as -1 inside the token, as
// Kubernetes does).
func EncodeContinue(key, prefixRange string, rev uint64) (string, error) {
	return EncodeContinueRemaining(key, prefixRange, rev, -1)
}

// EncodeContinueRemaining is EncodeContinue for a token that also records
// remaining, the number of objects from key to the end of prefixRange at rev
// (for a consistent token, rev > 0, of a list without a selector); a
// negative remaining is unknown, as EncodeContinue writes.
func EncodeContinueRemaining(key, prefixRange string, rev uint64, remaining int64) (string, error) {
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
	tok := continueToken{APIVersion: continueVersion, ResourceVersion: wire, StartKey: key[len(prefixRange):]}
	if remaining >= 0 && rev != 0 {
		tok.Remaining = &remaining
	}
	b, err := json.Marshal(tok)
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
	startKey, rev, _, err = decodeContinue(token, prefixRange)
	return startKey, rev, err
}

// decodeContinue is DecodeContinue that also returns the token's remaining
// count, or -1 when it has none (or one that cannot be right).
func decodeContinue(token, prefixRange string) (startKey string, rev uint64, remaining int64, err error) {
	invalid := func(msg string) (string, uint64, int64, error) {
		return "", 0, -1, &storage.Error{Err: storage.ErrInvalidContinue, Msg: "continue key is not valid: " + msg}
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
		return prefixRange + key[1:], 0, -1, nil
	}
	remaining = -1
	if c.Remaining != nil && *c.Remaining >= 0 {
		remaining = *c.Remaining
	}
	return prefixRange + key[1:], uint64(c.ResourceVersion), remaining, nil
}
