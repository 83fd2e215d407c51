package apiservice

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/annexapi/annex/kubeclient"
)

func TestParseService(t *testing.T) {
	s, err := ParseService("environments.annex-system")
	if err != nil || s.Name != "environments" || s.Namespace != "annex-system" {
		t.Fatalf("ParseService = %+v, %v", s, err)
	}
	if got, want := s.Hosts(), []string{"environments", "environments.annex-system", "environments.annex-system.svc", "environments.annex-system.svc.cluster.local"}; !slices.Equal(got, want) {
		t.Errorf("Hosts = %q, want %q", got, want)
	}
	for _, bad := range []string{"", "environments", ".ns", "name.", "a.b.c"} {
		if _, err := ParseService(bad); err == nil || !strings.Contains(err.Error(), "want name.namespace") {
			t.Errorf("ParseService(%q) = %v, want an error", bad, err)
		}
	}
}

// TestAPIServices: one APIService per version (duplicates merged), named
// <version>.<group>, kube's CRD priorities, port 443, and the caBundle as
// base64 in JSON as the API wants it.
func TestAPIServices(t *testing.T) {
	r, err := New(Config{Client: &kubeclient.Client{}, Service: Service{Namespace: "ns", Name: "svc"},
		Versions: []GroupVersion{{"example.annex.dev", "v1"}, {"example.annex.dev", "v1alpha1"}, {"example.annex.dev", "v1"}},
		CABundle: func() ([]byte, error) { return []byte("PEM"), nil }})
	if err != nil {
		t.Fatal(err)
	}
	got := r.APIServices([]byte("PEM"))
	if len(got) != 2 {
		t.Fatalf("%d APIServices, want 2: %+v", len(got), got)
	}
	b, _ := json.Marshal(got[0])
	want := `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.example.annex.dev","labels":{"app.kubernetes.io/managed-by":"annex"}},"spec":{"group":"example.annex.dev","version":"v1","service":{"namespace":"ns","name":"svc","port":443},"caBundle":"UEVN","groupPriorityMinimum":1000,"versionPriority":100}}`
	if string(b) != want {
		t.Errorf("APIService\n got %s\nwant %s", b, want)
	}
	if got[1].Metadata.Name != "v1alpha1.example.annex.dev" {
		t.Errorf("second APIService %q", got[1].Metadata.Name)
	}
	if err := r.Ready(nil); err == nil {
		t.Error("Ready before the first registration = nil")
	}
}

func TestNewRefusesIncompleteConfig(t *testing.T) {
	_, err := New(Config{})
	for _, want := range []string{"Client is required", "Service needs a Namespace and a Name", "no served group version", "CABundle is required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(Config{}) = %v, want it to say %q", err, want)
		}
	}
}
