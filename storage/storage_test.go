// Tests of the storage package's own code: keys, metadata parsing, uids.

package storage_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
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
			if err := backend.ValidateKey(c.wantKey); err != nil {
				t.Errorf("ValidateKey(%q): %v", c.wantKey, err)
			}
		})
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
			storage.Meta{Name: "a", Namespace: "ns", UID: "u1", ResourceVersion: "7", CreationTimestamp: "2024-01-02T03:04:05Z", DeletionTimestamp: "2024-01-03T00:00:00Z", Labels: storage.MakeLabels(map[string]string{"app": "x"})}, nil},
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
				got.DeletionTimestamp != c.want.DeletionTimestamp || got.Labels != c.want.Labels {
				t.Errorf("ParseMeta(%s) = %+v, want %+v", c.data, got, c.want)
			}
		})
	}
}

// FuzzParseMeta: never panics; errors are ErrInvalidObject; anything that
// parses is a JSON object.
func FuzzParseMeta(f *testing.F) {
	for _, s := range []string{`{}`, `{"metadata":{"name":"a","labels":{"x":"y"}}}`, `null`, `[]`, `"x"`, `{"metadata":1}`, ` {"metadata":null}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := storage.ParseMeta(data)
		if err != nil {
			if !errors.Is(err, storage.ErrInvalidObject) {
				t.Fatalf("ParseMeta error %v is not ErrInvalidObject", err)
			}
			return
		}
		if t2 := strings.TrimLeft(string(data), " \t\r\n"); !strings.HasPrefix(t2, "{") {
			t.Fatalf("ParseMeta accepted %q, which is not a JSON object", data)
		}
	})
}

func TestNewUID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := storage.NewUID(), storage.NewUID()
	if !re.MatchString(a) || a == b {
		t.Fatalf("uids %q %q", a, b)
	}
}

func TestFormatResourceVersion(t *testing.T) {
	if got := storage.FormatResourceVersion(987654321); got != "987654321" {
		t.Errorf("FormatResourceVersion(987654321) = %q", got)
	}
}
