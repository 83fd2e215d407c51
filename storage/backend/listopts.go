// This file holds the validation every backend shares of Get, List and Watch
// options: which revision a List reads at (resourceVersion, its match, the
// continue token), where a Watch starts, and the errors of a revision out of
// reach (too large, compacted, an expired continue token).

package backend

import (
	"fmt"

	"github.com/annexapi/annex/storage"
)

// ParseGetOptions validates the key and the resource version of a Get. It
// fails with storage.ErrInvalidKey or storage.ErrInvalidResourceVersion.
func ParseGetOptions(key string, opts storage.GetOptions) (ResourceVersion, error) {
	if err := ValidateKey(key); err != nil {
		return ResourceVersion{}, err
	}
	return ParseResourceVersion(opts.ResourceVersion)
}

// ListRequest is a List's options, validated and resolved to what a backend
// reads: a key range, a revision rule, a limit and a predicate.
type ListRequest struct {
	// Prefix is the listed prefix as PrefixRange returns it.
	Prefix string
	// Start is the first key to consider (>= Prefix): Prefix, or the start
	// key of a continue token.
	Start string
	// At is the revision to read at exactly; 0 means the latest.
	At uint64
	// FromToken says At came from a continue token: when At has been
	// compacted, the error carries a fresh token (see ExpiredContinue).
	FromToken bool
	// Remaining is, for a consistent continue token that recorded it, the
	// number of objects from Start to the end of Prefix at At; nil when
	// unknown. A token is the client's to send: a reader must not trust it
	// beyond a count to report (remainingItemCount).
	Remaining *int64
	// NotOlder is the revision the latest state must have reached (0: any).
	NotOlder uint64
	// AnyState is set for resourceVersion "0" without a continue token: any
	// state the backend has at hand will do (a serializable read).
	AnyState bool
	// Limit caps the page; 0 means no limit.
	Limit int64
	// Predicate selects objects; nil selects all.
	Predicate storage.Predicate
}

// ParseListOptions validates a List of prefix with opts as Kubernetes does and
// resolves the revision to read at. It fails with storage.ErrInvalidKey for a
// bad prefix, storage.ErrInvalidResourceVersion for a bad resource version or a
// combination Kubernetes forbids (a match without a version, Exact with "0", a
// version or a match with a continue token; "0" with a token is tolerated), and
// storage.ErrInvalidContinue for a token that does not decode or belongs to
// another prefix. A negative Limit is no limit.
func ParseListOptions(prefix string, opts storage.ListOptions) (ListRequest, error) {
	pr, err := PrefixRange(prefix)
	if err != nil {
		return ListRequest{}, err
	}
	switch opts.ResourceVersionMatch {
	case storage.MatchDefault, storage.MatchExact, storage.MatchNotOlderThan:
	default:
		return ListRequest{}, invalidRV(fmt.Sprintf("unsupported resourceVersionMatch %q", opts.ResourceVersionMatch))
	}
	rv, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return ListRequest{}, err
	}
	req := ListRequest{Prefix: pr, Start: pr, Limit: max(opts.Limit, 0), Predicate: opts.Predicate}
	switch {
	case opts.Continue != "":
		if opts.ResourceVersionMatch != "" {
			return ListRequest{}, invalidRV("resourceVersionMatch is forbidden when continue is provided")
		}
		if !rv.Unset && rv.Revision != 0 {
			return ListRequest{}, invalidRV("specifying resource version is not allowed when using continue")
		}
		start, tokRev, remaining, err := decodeContinue(opts.Continue, pr)
		if err != nil {
			return ListRequest{}, err
		}
		req.Start = start
		if tokRev != 0 {
			req.At, req.FromToken = tokRev, true
			if remaining >= 0 {
				req.Remaining = &remaining
			}
		}
	case opts.ResourceVersionMatch != "" && rv.Unset:
		return ListRequest{}, invalidRV("resourceVersionMatch is forbidden unless resourceVersion is provided")
	case opts.ResourceVersionMatch == storage.MatchExact && rv.Revision == 0:
		return ListRequest{}, invalidRV("resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"")
	case rv.Revision != 0 && (opts.ResourceVersionMatch == storage.MatchExact ||
		(opts.ResourceVersionMatch == storage.MatchDefault && req.Limit > 0)):
		req.At = rv.Revision
	case rv.Revision != 0:
		req.NotOlder = rv.Revision
	case !rv.Unset:
		req.AnyState = true
	}
	return req, nil
}

// CheckRevision returns storage.ErrTooLargeResourceVersion when the request
// needs a revision after current, the store's revision.
func (r ListRequest) CheckRevision(current uint64) error {
	switch {
	case r.NotOlder > current:
		return TooLargeError(r.NotOlder, current)
	case r.At > current:
		return TooLargeError(r.At, current)
	}
	return nil
}

// ExpiredContinue turns e, the storage.ErrExpired of reading r.At, into the
// error of an expired continue token when r.At came from one: Kubernetes'
// message, and a fresh inconsistent token that continues from the same key at
// the latest revision. Otherwise it returns e as it is.
func (r ListRequest) ExpiredContinue(e *storage.Error) error {
	if !r.FromToken {
		return e
	}
	tok, err := EncodeContinue(r.Start, r.Prefix, 0)
	if err != nil {
		return err
	}
	e.Msg = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."
	e.Continue = tok
	return e
}

// TooLargeError is the storage.ErrTooLargeResourceVersion of a request for
// revision requested when the store is at current.
func TooLargeError(requested, current uint64) *storage.Error {
	return &storage.Error{Err: storage.ErrTooLargeResourceVersion, ResourceVersion: current, Requested: requested,
		Msg: fmt.Sprintf("Too large resource version: %d, current: %d", requested, current)}
}

// ExpiredError is the storage.ErrExpired of a request for a revision at or
// before compacted, the store's compacted revision.
func ExpiredError(compacted uint64) *storage.Error {
	return &storage.Error{Err: storage.ErrExpired, ResourceVersion: compacted,
		Msg: fmt.Sprintf("required revision has been compacted (compacted revision %d)", compacted)}
}

func invalidRV(msg string) error {
	return &storage.Error{Err: storage.ErrInvalidResourceVersion, Msg: msg}
}

// WatchRequest is a Watch's key and start, validated.
type WatchRequest struct {
	// Key is the watched key, or the prefix range (as PrefixRange returns
	// it) when Recursive.
	Key       string
	Recursive bool
	// Initial is set for resourceVersion "" and "0": the watch first sends
	// the current state as EventAdded events, then the changes after it.
	Initial bool
	// After is the revision the changes start after, for "N"; 0 when
	// Initial.
	After uint64
}

// ParseWatchOptions validates the key (a prefix when opts.Recursive) and the
// resource version of a Watch. It fails with storage.ErrInvalidKey or
// storage.ErrInvalidResourceVersion.
func ParseWatchOptions(key string, opts storage.WatchOptions) (WatchRequest, error) {
	req := WatchRequest{Key: key, Recursive: opts.Recursive}
	if opts.Recursive {
		pr, err := PrefixRange(key)
		if err != nil {
			return WatchRequest{}, err
		}
		req.Key = pr
	} else if err := ValidateKey(key); err != nil {
		return WatchRequest{}, err
	}
	rv, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return WatchRequest{}, err
	}
	req.Initial, req.After = rv.Revision == 0, rv.Revision
	return req, nil
}
