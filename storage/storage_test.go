// Tests of the storage package's own code: keys, prefixes, resource version
// parsing, metadata parsing, and the continue token.

package storage_test

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/annexapi/annex/storage"
)

func TestObjectKey(t *testing.T) {
	for _, c := range []struct {
		name                           string
		group, resource, namespace, nm string
		wantKey, wantPrefix            string
	}{
		{"namespaced", "metrics.k8s.io", "pods", "kube-system", "p", "/metrics.k8s.io/pods/kube-system/p", "/metrics.k8s.io/pods/kube-system"},
		{"cluster_scoped", "metrics.k8s.io", "nodes", "", "n1", "/metrics.k8s.io/nodes/n1", "/metrics.k8s.io/nodes"},
		{"core_group", "", "configmaps", "default", "c", "/core/configmaps/default/c", "/core/configmaps/default"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := storage.ObjectKey(c.group, c.resource, c.namespace, c.nm); got != c.wantKey {
				t.Errorf("ObjectKey = %q, want %q", got, c.wantKey)
			}
			if got := storage.ResourcePrefix(c.group, c.resource, c.namespace); got != c.wantPrefix {
				t.Errorf("ResourcePrefix = %q, want %q", got, c.wantPrefix)
			}
			if err := storage.ValidateKey(c.wantKey); err != nil {
				t.Errorf("ValidateKey(%q): %v", c.wantKey, err)
			}
		})
	}
}

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
			err := storage.ValidateKey(c.key)
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
			got, err := storage.PrefixRange(c.prefix)
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
		want storage.ParsedResourceVersion
		err  error
	}{
		{"unset", "", storage.ParsedResourceVersion{Unset: true}, nil},
		{"zero", "0", storage.ParsedResourceVersion{}, nil},
		{"revision", "12345", storage.ParsedResourceVersion{Revision: 12345}, nil},
		{"max_uint64", "18446744073709551615", storage.ParsedResourceVersion{Revision: 1<<64 - 1}, nil},
		// strconv.ParseUint, as k8s.io/apiserver's versioner uses.
		{"leading_zero", "007", storage.ParsedResourceVersion{Revision: 7}, nil},
		{"overflow", "18446744073709551616", storage.ParsedResourceVersion{}, storage.ErrInvalidResourceVersion},
		{"negative", "-1", storage.ParsedResourceVersion{}, storage.ErrInvalidResourceVersion},
		{"plus", "+1", storage.ParsedResourceVersion{}, storage.ErrInvalidResourceVersion},
		{"letters", "abc", storage.ParsedResourceVersion{}, storage.ErrInvalidResourceVersion},
		{"fraction", "1.5", storage.ParsedResourceVersion{}, storage.ErrInvalidResourceVersion},
		{"space", " 1", storage.ParsedResourceVersion{}, storage.ErrInvalidResourceVersion},
		{"hex", "0x10", storage.ParsedResourceVersion{}, storage.ErrInvalidResourceVersion},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := storage.ParseResourceVersion(c.rv)
			if !errors.Is(err, c.err) || got != c.want {
				t.Errorf("ParseResourceVersion(%q) = %+v, %v; want %+v, %v", c.rv, got, err, c.want, c.err)
			}
		})
	}
	if got := storage.FormatResourceVersion(987654321); got != "987654321" {
		t.Errorf("FormatResourceVersion(987654321) = %q", got)
	}
}

func TestParseMeta(t *testing.T) {
	for _, c := range []struct {
		name string
		data string
		want storage.Meta
		err  error
	}{
		{"full", `{"kind":"Widget","metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7","creationTimestamp":"2024-01-02T03:04:05Z","deletionTimestamp":"2024-01-03T00:00:00Z","labels":{"app":"x"},"annotations":{"k":"v"}},"spec":{}}`,
			storage.Meta{Name: "a", Namespace: "ns", UID: "u1", ResourceVersion: "7", CreationTimestamp: "2024-01-02T03:04:05Z", DeletionTimestamp: "2024-01-03T00:00:00Z", Labels: map[string]string{"app": "x"}}, nil},
		{"no_metadata", `{"kind":"Widget"}`, storage.Meta{}, nil},
		{"null_metadata", `{"metadata":null}`, storage.Meta{}, nil},
		{"array", `[1,2]`, storage.Meta{}, storage.ErrInvalidObject},
		{"string", `"x"`, storage.Meta{}, storage.ErrInvalidObject},
		{"null", `null`, storage.Meta{}, storage.ErrInvalidObject},
		{"empty", ``, storage.Meta{}, storage.ErrInvalidObject},
		{"truncated", `{"metadata":{"name":"a"`, storage.Meta{}, storage.ErrInvalidObject},
		{"metadata_not_object", `{"metadata":"x"}`, storage.Meta{}, storage.ErrInvalidObject},
		{"name_not_string", `{"metadata":{"name":1}}`, storage.Meta{}, storage.ErrInvalidObject},
		{"label_not_string", `{"metadata":{"labels":{"a":1}}}`, storage.Meta{}, storage.ErrInvalidObject},
		{"trailing_garbage", `{"metadata":{}} x`, storage.Meta{}, storage.ErrInvalidObject},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := storage.ParseMeta([]byte(c.data))
			if !errors.Is(err, c.err) {
				t.Fatalf("ParseMeta(%s) error = %v, want %v", c.data, err, c.err)
			}
			if got.Name != c.want.Name || got.Namespace != c.want.Namespace || got.UID != c.want.UID ||
				got.ResourceVersion != c.want.ResourceVersion || got.CreationTimestamp != c.want.CreationTimestamp ||
				got.DeletionTimestamp != c.want.DeletionTimestamp || len(got.Labels) != len(c.want.Labels) || got.Labels["app"] != c.want.Labels["app"] {
				t.Errorf("ParseMeta(%s) = %+v, want %+v", c.data, got, c.want)
			}
		})
	}
}

// token is the continue token of raw JSON, built without the package.
func token(raw string) string { return base64.RawURLEncoding.EncodeToString([]byte(raw)) }

func TestContinueToken(t *testing.T) {
	const pr = "/g/r/"
	t.Run("wire_format", func(t *testing.T) {
		// The exact bytes k8s.io/apiserver writes: RawURLEncoding of
		// {"v":"meta.k8s.io/v1","rv":<rv>,"start":"<key after the prefix>"}.
		got, err := storage.EncodeContinue("/g/r/ns/b\x00", pr, 42)
		if err != nil {
			t.Fatal(err)
		}
		if want := token(`{"v":"meta.k8s.io/v1","rv":42,"start":"ns/b\u0000"}`); got != want {
			t.Errorf("EncodeContinue = %q, want %q", got, want)
		}
	})
	t.Run("round_trip", func(t *testing.T) {
		for _, rev := range []int64{1, 42, -1, 1<<63 - 1} {
			tok, err := storage.EncodeContinue("/g/r/ns/b\x00", pr, rev)
			if err != nil {
				t.Fatal(err)
			}
			k, r, err := storage.DecodeContinue(tok, pr)
			if err != nil || k != "/g/r/ns/b\x00" || r != rev {
				t.Errorf("DecodeContinue(EncodeContinue(rev %d)) = %q, %d, %v", rev, k, r, err)
			}
		}
	})
	t.Run("key_outside_prefix", func(t *testing.T) {
		_, err := storage.EncodeContinue("/g/other/x", pr, 1)
		if !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("EncodeContinue outside the prefix: %v, want ErrInvalidKey", err)
		}
	})
	t.Run("leading_slash_in_start", func(t *testing.T) {
		k, _, err := storage.DecodeContinue(token(`{"v":"meta.k8s.io/v1","rv":3,"start":"/ns/b"}`), pr)
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
			k, rev, err := storage.DecodeContinue(c.token, pr)
			if !errors.Is(err, storage.ErrInvalidContinue) {
				t.Errorf("DecodeContinue = %q, %d, %v; want ErrInvalidContinue", k, rev, err)
			}
		})
	}
}
