// Fuzz targets for the parsers of untrusted input in the storage package:
// continue tokens, resource versions, keys and object metadata. Their seed
// corpora run as ordinary tests; `go test -fuzz=FuzzDecodeContinue ./storage`
// explores further.

package backend_test

import (
	"errors"
	"math"
	"path"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// fuzzPrefix is one of the prefixes the continue targets decode under,
// picked by the fuzzer.
func fuzzPrefix(which uint8) string {
	prefixes := [...]string{"/g/r/", "/g/r/ns/", "/core/configmaps/"}
	return prefixes[int(which)%len(prefixes)]
}

// FuzzDecodeContinue feeds arbitrary tokens: decoding never panics, a
// decoded key always lies under the prefix and cannot climb out of it, and
// re-encoding what was decoded (revision 0 for an inconsistent token)
// round-trips.
func FuzzDecodeContinue(f *testing.F) {
	for _, s := range []string{
		"", "!!!", "e30",
		token(`{"v":"meta.k8s.io/v1","rv":42,"start":"ns/b\u0000"}`),
		token(`{"v":"meta.k8s.io/v1","rv":-1,"start":"a"}`),
		token(`{"v":"meta.k8s.io/v1","rv":3,"start":"/a"}`),
		token(`{"v":"meta.k8s.io/v1","rv":3,"start":"../../x"}`),
		token(`{"v":"meta.k8s.io/v1","rv":3,"start":"a/../../x"}`),
		token(`{"v":"meta.k8s.io/v1","rv":3,"start":"a//b"}`),
		token(`{"v":"meta.k8s.io/v1","rv":0,"start":"a"}`),
		token(`{"v":"meta.k8s.io/v1","rv":3,"start":".."}`),
		token(`{"v":"meta.k8s.io/v1","rv":3,"start":"\u00ff\ufffd"}`),
		token(`{"v":"meta.k8s.io/v1","rv":3e3,"start":"a"}`),
		token(`{"v":"meta.k8s.io/v1","rv":3,"start":"a","start":"../x"}`),
	} {
		for i := range uint8(3) {
			f.Add(s, i)
		}
	}
	f.Fuzz(func(t *testing.T, tok string, which uint8) {
		pr := fuzzPrefix(which)
		k, rev, err := backend.DecodeContinue(tok, pr)
		if err != nil {
			if !errors.Is(err, storage.ErrInvalidContinue) {
				t.Fatalf("DecodeContinue error %v is not ErrInvalidContinue", err)
			}
			return
		}
		if !under(k, pr) {
			t.Fatalf("decoded key %q is not under %q", k, pr)
		}
		if c := path.Clean(k); !under(c, pr) {
			t.Fatalf("decoded key %q cleans to %q, outside %q", k, c, pr)
		}
		again, err := backend.EncodeContinue(k, pr, rev)
		if err != nil {
			t.Fatalf("EncodeContinue(%q) of a decoded key: %v", k, err)
		}
		k2, rev2, err := backend.DecodeContinue(again, pr)
		if err != nil || k2 != k || rev2 != rev {
			t.Fatalf("re-encoded token decodes to %q, %d, %v; want %q, %d", k2, rev2, err, k, rev)
		}
	})
}

// under reports whether key k lies in prefix range pr: below it, or (for a
// start key) at pr itself, where a scan of the range begins.
func under(k, pr string) bool {
	return strings.HasPrefix(k, pr) || k+"/" == pr
}

// FuzzContinueRoundTrip encodes arbitrary start keys and revisions: a key
// made of safe segments (no empty, "." or ".." segment) round-trips exactly
// with its revision (0, inconsistent, included); anything that decodes at all
// decodes under the prefix; a revision beyond int64, which the token cannot
// carry, fails to encode with ErrInvalidResourceVersion.
func FuzzContinueRoundTrip(f *testing.F) {
	f.Add("ns/b\x00", uint64(5), uint8(0))
	f.Add("b", uint64(0), uint8(1))
	f.Add("a/../../x", uint64(7), uint8(2))
	f.Add("a//b", uint64(7), uint8(0))
	f.Add("", uint64(7), uint8(0))
	f.Add("x", uint64(1<<63), uint8(0))
	f.Add("x", uint64(1<<64-1), uint8(0))
	f.Add("/", uint64(7), uint8(1)) // decodes to the prefix itself, as in k8s.io/apiserver
	f.Add("ünïcode/名前\x00", uint64(1<<62), uint8(1))
	f.Fuzz(func(t *testing.T, start string, rev uint64, which uint8) {
		pr := fuzzPrefix(which)
		if !utf8.ValidString(start) {
			// JSON replaces invalid UTF-8 with U+FFFD, as in k8s.io/apiserver;
			// keys come from validated names, which are UTF-8.
			return
		}
		tok, err := backend.EncodeContinue(pr+start, pr, rev)
		if rev > math.MaxInt64 {
			if !errors.Is(err, storage.ErrInvalidResourceVersion) {
				t.Fatalf("EncodeContinue at revision %d = %q, %v; want ErrInvalidResourceVersion", rev, tok, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("EncodeContinue(%q): %v", pr+start, err)
		}
		k, r, err := backend.DecodeContinue(tok, pr)
		safe := start != "" && !strings.HasPrefix(start, "/")
		for _, seg := range strings.Split(start, "/") {
			safe = safe && seg != "" && seg != "." && seg != ".."
		}
		switch {
		case err == nil && (!under(k, pr) || !under(path.Clean(k), pr)):
			t.Fatalf("decoded key %q leaves %q", k, pr)
		case safe && (err != nil || k != pr+start || r != rev):
			t.Fatalf("safe start %q rev %d decodes to %q, %d, %v", start, rev, k, r, err)
		case err != nil && !errors.Is(err, storage.ErrInvalidContinue):
			t.Fatalf("DecodeContinue error %v is not ErrInvalidContinue", err)
		}
	})
}

// FuzzParseResourceVersion: never panics, errors are
// ErrInvalidResourceVersion, and what parses formats back to a string that
// parses to the same revision (the same string when it had no leading zero).
func FuzzParseResourceVersion(f *testing.F) {
	for _, s := range []string{"", "0", "1", "007", "18446744073709551615", "18446744073709551616", "-1", "+1", "1e3", " 1", "abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := backend.ParseResourceVersion(s)
		if err != nil {
			if !errors.Is(err, storage.ErrInvalidResourceVersion) {
				t.Fatalf("ParseResourceVersion(%q) error %v is not ErrInvalidResourceVersion", s, err)
			}
			return
		}
		if p.Unset != (s == "") {
			t.Fatalf("ParseResourceVersion(%q).Unset = %v", s, p.Unset)
		}
		if p.Unset {
			return
		}
		f := storage.FormatResourceVersion(p.Revision)
		if again, err := backend.ParseResourceVersion(f); err != nil || again.Revision != p.Revision {
			t.Fatalf("%q parses to %d, formats to %q, which parses to %+v, %v", s, p.Revision, f, again, err)
		}
		if (len(s) == 1 || s[0] != '0') && f != s {
			t.Fatalf("%q parses to %d, which formats to %q", s, p.Revision, f)
		}
	})
}

// FuzzValidateKey: a valid key is clean, absolute, has no "." or ".."
// segment, and its PrefixRange is the key plus one slash; errors are
// ErrInvalidKey.
func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"", "/", "/a", "/a/b", "/a/", "//a", "/a/./b", "/a/../b", "/..", "a/b", "/a\x00b", "/a b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		err := backend.ValidateKey(k)
		if err != nil {
			if !errors.Is(err, storage.ErrInvalidKey) {
				t.Fatalf("ValidateKey(%q) error %v is not ErrInvalidKey", k, err)
			}
			return
		}
		if path.Clean(k) != k || !strings.HasPrefix(k, "/") || k == "/" {
			t.Fatalf("ValidateKey accepted %q, which is not a clean absolute path below the root", k)
		}
		pr, err := backend.PrefixRange(k)
		if err != nil || pr != k+"/" {
			t.Fatalf("PrefixRange(%q) = %q, %v", k, pr, err)
		}
	})
}
