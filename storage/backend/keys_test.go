// Tests of keys, prefixes, resource version parsing and the continue token.

package backend_test

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

func TestValidateKey(t *testing.T) {
	for _, c := range []struct {
		name  string
		key   string
		valid bool
	}{
		{"object", "/g/r/ns/n", true},
		{"one_segment", "/a", true},
		{"dots_inside_a_name", "/g/r/a..b", true},
		{"empty", "", false},
		{"root", "/", false},
		{"relative", "g/r", false},
		{"trailing_slash", "/g/r/", false},
		{"empty_segment", "/g//r", false},
		{"dot_segment", "/g/./r", false},
		{"dotdot_segment", "/g/../r", false},
		{"dotdot_last", "/g/r/..", false},
		{"dot_last", "/g/.", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := backend.ValidateKey(c.key)
			if c.valid && err != nil {
				t.Errorf("ValidateKey(%q) = %v, want nil", c.key, err)
			}
			if !c.valid && !errors.Is(err, storage.ErrInvalidKey) {
				t.Errorf("ValidateKey(%q) = %v, want ErrInvalidKey", c.key, err)
			}
		})
	}
}

func TestPrefixRange(t *testing.T) {
	for _, c := range []struct {
		name, prefix, want string
		err                error
	}{
		{"adds_slash", "/g/r", "/g/r/", nil},
		{"keeps_slash", "/g/r/", "/g/r/", nil},
		{"invalid", "/g//r", "", storage.ErrInvalidKey},
		{"root", "/", "", storage.ErrInvalidKey},
		{"empty", "", "", storage.ErrInvalidKey},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := backend.PrefixRange(c.prefix)
			if !errors.Is(err, c.err) || got != c.want {
				t.Errorf("PrefixRange(%q) = %q, %v; want %q, %v", c.prefix, got, err, c.want, c.err)
			}
		})
	}
}

func TestParseResourceVersion(t *testing.T) {
	for _, c := range []struct {
		name string
		rv   string
		want backend.ResourceVersion
		err  error
	}{
		{"unset", "", backend.ResourceVersion{Unset: true}, nil},
		{"zero", "0", backend.ResourceVersion{}, nil},
		{"revision", "12345", backend.ResourceVersion{Revision: 12345}, nil},
		{"max_uint64", "18446744073709551615", backend.ResourceVersion{Revision: 1<<64 - 1}, nil},
		// strconv.ParseUint, as k8s.io/apiserver's versioner uses.
		{"leading_zero", "007", backend.ResourceVersion{Revision: 7}, nil},
		{"overflow", "18446744073709551616", backend.ResourceVersion{}, storage.ErrInvalidResourceVersion},
		{"negative", "-1", backend.ResourceVersion{}, storage.ErrInvalidResourceVersion},
		{"plus", "+1", backend.ResourceVersion{}, storage.ErrInvalidResourceVersion},
		{"letters", "abc", backend.ResourceVersion{}, storage.ErrInvalidResourceVersion},
		{"fraction", "1.5", backend.ResourceVersion{}, storage.ErrInvalidResourceVersion},
		{"space", " 1", backend.ResourceVersion{}, storage.ErrInvalidResourceVersion},
		{"hex", "0x10", backend.ResourceVersion{}, storage.ErrInvalidResourceVersion},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := backend.ParseResourceVersion(c.rv)
			if !errors.Is(err, c.err) || got != c.want {
				t.Errorf("ParseResourceVersion(%q) = %+v, %v; want %+v, %v", c.rv, got, err, c.want, c.err)
			}
		})
	}
	if got := storage.FormatResourceVersion(987654321); got != "987654321" {
		t.Errorf("FormatResourceVersion(987654321) = %q", got)
	}
}

// token is the continue token of raw JSON, built without the package.
func token(raw string) string { return base64.RawURLEncoding.EncodeToString([]byte(raw)) }

func TestContinueToken(t *testing.T) {
	const pr = "/g/r/"
	t.Run("wire_format", func(t *testing.T) {
		// The exact bytes k8s.io/apiserver writes: RawURLEncoding of
		// {"v":"meta.k8s.io/v1","rv":<rv>,"start":"<key after the prefix>"}.
		got, err := backend.EncodeContinue("/g/r/ns/b\x00", pr, 42)
		if err != nil {
			t.Fatal(err)
		}
		if want := token(`{"v":"meta.k8s.io/v1","rv":42,"start":"ns/b\u0000"}`); got != want {
			t.Errorf("EncodeContinue = %q, want %q", got, want)
		}
	})
	t.Run("inconsistent_wire_format", func(t *testing.T) {
		// Revision 0 is an inconsistent token: -1 on the wire.
		got, err := backend.EncodeContinue("/g/r/ns/b\x00", pr, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := token(`{"v":"meta.k8s.io/v1","rv":-1,"start":"ns/b\u0000"}`); got != want {
			t.Errorf("EncodeContinue = %q, want %q", got, want)
		}
	})
	t.Run("revision_beyond_int64", func(t *testing.T) {
		if tok, err := backend.EncodeContinue("/g/r/ns/b\x00", pr, 1<<63); !errors.Is(err, storage.ErrInvalidResourceVersion) {
			t.Errorf("EncodeContinue at 1<<63 = %q, %v; want ErrInvalidResourceVersion", tok, err)
		}
	})
	t.Run("round_trip", func(t *testing.T) {
		for _, rev := range []uint64{1, 42, 0, 1<<63 - 1} {
			tok, err := backend.EncodeContinue("/g/r/ns/b\x00", pr, rev)
			if err != nil {
				t.Fatal(err)
			}
			k, r, err := backend.DecodeContinue(tok, pr)
			if err != nil || k != "/g/r/ns/b\x00" || r != rev {
				t.Errorf("DecodeContinue(EncodeContinue(rev %d)) = %q, %d, %v", rev, k, r, err)
			}
		}
	})
	t.Run("key_outside_prefix", func(t *testing.T) {
		_, err := backend.EncodeContinue("/g/other/x", pr, 1)
		if !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("EncodeContinue outside the prefix: %v, want ErrInvalidKey", err)
		}
	})
	t.Run("leading_slash_in_start", func(t *testing.T) {
		k, _, err := backend.DecodeContinue(token(`{"v":"meta.k8s.io/v1","rv":3,"start":"/ns/b"}`), pr)
		if err != nil || k != "/g/r/ns/b" {
			t.Errorf("DecodeContinue with a leading slash = %q, %v; want /g/r/ns/b", k, err)
		}
	})
	for _, c := range []struct {
		name, token string
	}{
		{"not_base64", "!!!"},
		{"std_base64_padding", base64.StdEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":3,"start":"a"}`)) + "="},
		{"not_json", token(`not json`)},
		{"wrong_version", token(`{"v":"meta.k8s.io/v2","rv":3,"start":"a"}`)},
		{"no_version", token(`{"rv":3,"start":"a"}`)},
		{"zero_rv", token(`{"v":"meta.k8s.io/v1","rv":0,"start":"a"}`)},
		{"rv_below_minus_one", token(`{"v":"meta.k8s.io/v1","rv":-2,"start":"a"}`)},
		{"empty_start", token(`{"v":"meta.k8s.io/v1","rv":3,"start":""}`)},
		{"parent_traversal", token(`{"v":"meta.k8s.io/v1","rv":3,"start":"../../x"}`)},
		{"inner_traversal", token(`{"v":"meta.k8s.io/v1","rv":3,"start":"a/../../x"}`)},
		{"double_slash", token(`{"v":"meta.k8s.io/v1","rv":3,"start":"a//b"}`)},
		{"dot_segment", token(`{"v":"meta.k8s.io/v1","rv":3,"start":"./a"}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, rev, err := backend.DecodeContinue(c.token, pr)
			if !errors.Is(err, storage.ErrInvalidContinue) {
				t.Errorf("DecodeContinue = %q, %d, %v; want ErrInvalidContinue", k, rev, err)
			}
		})
	}
}
