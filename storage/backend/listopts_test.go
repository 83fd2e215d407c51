// Tests of the shared List and Watch option validation: every rule of
// resourceVersion, resourceVersionMatch and continue, how each valid
// combination resolves, and the errors of a revision out of reach.

package backend_test

import (
	"errors"
	"testing"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

func TestParseListOptions(t *testing.T) {
	const p = "/g/things/ns"
	pr := p + "/"
	tok := func(start string, rev uint64) string {
		t.Helper()
		s, err := backend.EncodeContinue(pr+start, pr, rev)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		name    string
		prefix  string
		opts    storage.ListOptions
		wantErr error
		wantMsg string
		want    backend.ListRequest // Prefix defaults to pr, Start to Prefix
	}{
		{name: "latest", opts: storage.ListOptions{}, want: backend.ListRequest{}},
		{name: "any_state", opts: storage.ListOptions{ResourceVersion: "0"}, want: backend.ListRequest{AnyState: true}},
		{name: "not_older_than_without_limit", opts: storage.ListOptions{ResourceVersion: "5"}, want: backend.ListRequest{NotOlder: 5}},
		{name: "legacy_exact_with_limit", opts: storage.ListOptions{ResourceVersion: "5", Limit: 2}, want: backend.ListRequest{At: 5, Limit: 2}},
		{name: "explicit_not_older_than_with_limit", opts: storage.ListOptions{ResourceVersion: "5", ResourceVersionMatch: storage.MatchNotOlderThan, Limit: 2},
			want: backend.ListRequest{NotOlder: 5, Limit: 2}},
		{name: "exact", opts: storage.ListOptions{ResourceVersion: "5", ResourceVersionMatch: storage.MatchExact}, want: backend.ListRequest{At: 5}},
		{name: "not_older_than_zero_is_any_state", opts: storage.ListOptions{ResourceVersion: "0", ResourceVersionMatch: storage.MatchNotOlderThan},
			want: backend.ListRequest{AnyState: true}},
		{name: "negative_limit_is_no_limit", opts: storage.ListOptions{ResourceVersion: "5", Limit: -1}, want: backend.ListRequest{NotOlder: 5}},
		{name: "continue_reads_at_the_tokens_revision", opts: storage.ListOptions{Continue: tok("b\x00", 9), Limit: 2},
			want: backend.ListRequest{Start: pr + "b\x00", At: 9, FromToken: true, Limit: 2}},
		{name: "continue_tolerates_resource_version_zero", opts: storage.ListOptions{Continue: tok("b\x00", 9), ResourceVersion: "0"},
			want: backend.ListRequest{Start: pr + "b\x00", At: 9, FromToken: true}},
		{name: "inconsistent_continue_reads_latest", opts: storage.ListOptions{Continue: tok("b", 0)},
			want: backend.ListRequest{Start: pr + "b"}},
		{name: "prefix_with_trailing_slash", prefix: pr, opts: storage.ListOptions{}, want: backend.ListRequest{}},

		{name: "invalid_prefix", prefix: "/g/../x", wantErr: storage.ErrInvalidKey},
		{name: "unsupported_match", opts: storage.ListOptions{ResourceVersion: "5", ResourceVersionMatch: "Newest"},
			wantErr: storage.ErrInvalidResourceVersion, wantMsg: `unsupported resourceVersionMatch "Newest"`},
		{name: "malformed_resource_version", opts: storage.ListOptions{ResourceVersion: "x"}, wantErr: storage.ErrInvalidResourceVersion},
		{name: "match_without_resource_version", opts: storage.ListOptions{ResourceVersionMatch: storage.MatchExact},
			wantErr: storage.ErrInvalidResourceVersion, wantMsg: "resourceVersionMatch is forbidden unless resourceVersion is provided"},
		{name: "exact_zero", opts: storage.ListOptions{ResourceVersion: "0", ResourceVersionMatch: storage.MatchExact},
			wantErr: storage.ErrInvalidResourceVersion, wantMsg: `resourceVersionMatch "Exact" is forbidden for resourceVersion "0"`},
		{name: "continue_with_match", opts: storage.ListOptions{Continue: tok("b", 9), ResourceVersionMatch: storage.MatchNotOlderThan},
			wantErr: storage.ErrInvalidResourceVersion, wantMsg: "resourceVersionMatch is forbidden when continue is provided"},
		{name: "continue_with_resource_version", opts: storage.ListOptions{Continue: tok("b", 9), ResourceVersion: "9"},
			wantErr: storage.ErrInvalidResourceVersion, wantMsg: "specifying resource version is not allowed when using continue"},
		{name: "garbage_continue", opts: storage.ListOptions{Continue: "!!"}, wantErr: storage.ErrInvalidContinue},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := c.prefix
			if prefix == "" {
				prefix = p
			}
			got, err := backend.ParseListOptions(prefix, c.opts)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				var se *storage.Error
				if c.wantMsg != "" && (!errors.As(err, &se) || se.Msg != c.wantMsg) {
					t.Errorf("err = %v, want the message %q", err, c.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			want := c.want
			want.Prefix = pr
			if want.Start == "" {
				want.Start = pr
			}
			if got != want {
				t.Errorf("ParseListOptions = %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestListRequestCheckRevision(t *testing.T) {
	for _, c := range []struct {
		name string
		req  backend.ListRequest
		fail bool
	}{
		{"latest", backend.ListRequest{}, false},
		{"not_older_than_current", backend.ListRequest{NotOlder: 10}, false},
		{"not_older_than_future", backend.ListRequest{NotOlder: 11}, true},
		{"exact_current", backend.ListRequest{At: 10}, false},
		{"exact_future", backend.ListRequest{At: 11}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.req.CheckRevision(10)
			if !c.fail {
				if err != nil {
					t.Fatalf("CheckRevision(10) = %v", err)
				}
				return
			}
			var se *storage.Error
			if !errors.As(err, &se) || se.Err != storage.ErrTooLargeResourceVersion || se.ResourceVersion != 10 ||
				se.Msg != "Too large resource version: 11, current: 10" {
				t.Errorf("CheckRevision(10) = %#v, want ErrTooLargeResourceVersion at 10", err)
			}
		})
	}
}

func TestListRequestExpiredContinue(t *testing.T) {
	req, err := backend.ParseListOptions("/g/things", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plain := req.ExpiredContinue(backend.ExpiredError(4))
	var se *storage.Error
	if !errors.As(plain, &se) || se.Continue != "" || se.Msg != "required revision has been compacted (compacted revision 4)" || se.ResourceVersion != 4 {
		t.Errorf("expired exact list: %#v, want the plain ErrExpired", plain)
	}

	tok, err := backend.EncodeContinue("/g/things/ns/b\x00", "/g/things/", 3)
	if err != nil {
		t.Fatal(err)
	}
	req, err = backend.ParseListOptions("/g/things", storage.ListOptions{Continue: tok})
	if err != nil {
		t.Fatal(err)
	}
	err = req.ExpiredContinue(backend.ExpiredError(4))
	if !errors.As(err, &se) || !errors.Is(err, storage.ErrExpired) || se.ResourceVersion != 4 {
		t.Fatalf("expired token: %#v, want ErrExpired at 4", err)
	}
	start, rev, err := backend.DecodeContinue(se.Continue, "/g/things/")
	if err != nil || start != "/g/things/ns/b\x00" || rev != 0 {
		t.Errorf("fresh token continues at %q, revision %d (%v); want the same key, 0 (inconsistent)", start, rev, err)
	}
	if se.Msg == "" || se.Msg == "required revision has been compacted (compacted revision 4)" {
		t.Errorf("expired token message %q is not the continue message", se.Msg)
	}
}

func TestParseWatchOptions(t *testing.T) {
	for _, c := range []struct {
		name    string
		key     string
		opts    storage.WatchOptions
		want    backend.WatchRequest
		wantErr error
	}{
		{"key_from_latest", "/g/t/ns/a", storage.WatchOptions{}, backend.WatchRequest{Key: "/g/t/ns/a", Initial: true}, nil},
		{"key_from_zero", "/g/t/ns/a", storage.WatchOptions{ResourceVersion: "0"}, backend.WatchRequest{Key: "/g/t/ns/a", Initial: true}, nil},
		{"prefix_after_revision", "/g/t", storage.WatchOptions{Recursive: true, ResourceVersion: "7"},
			backend.WatchRequest{Key: "/g/t/", Recursive: true, After: 7}, nil},
		{"key_with_trailing_slash", "/g/t/", storage.WatchOptions{}, backend.WatchRequest{}, storage.ErrInvalidKey},
		{"bad_prefix", "g/t", storage.WatchOptions{Recursive: true}, backend.WatchRequest{}, storage.ErrInvalidKey},
		{"bad_resource_version", "/g/t/ns/a", storage.WatchOptions{ResourceVersion: "-1"}, backend.WatchRequest{}, storage.ErrInvalidResourceVersion},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := backend.ParseWatchOptions(c.key, c.opts)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("ParseWatchOptions = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}
