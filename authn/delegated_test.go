package authn_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/certs"
)

func TestDelegated_readiness_says_what_is_missing(t *testing.T) {
	t.Parallel()
	proxyCA, err := certs.NewCA(certs.CAConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		code      int
		data      map[string]string
		tolerate  bool
		wantReady bool
		wantMsg   string
	}{
		{name: "rbac_denied", code: 403, wantMsg: "extension-apiserver-authentication-reader"},
		{name: "no_configmap", code: 404, wantMsg: "does not exist"},
		{name: "no_request_header_ca", code: 200, data: map[string]string{}, wantMsg: "no requestheader-client-ca-file"},
		{name: "no_request_header_ca_tolerated", code: 200, data: map[string]string{}, tolerate: true, wantReady: true},
		{name: "bad_header_list", code: 200, data: map[string]string{"requestheader-client-ca-file": string(proxyCA.CertPEM),
			"requestheader-username-headers": "X-Remote-User"}, wantMsg: "not a JSON string array"},
		{name: "bad_pem", code: 200, data: map[string]string{"requestheader-client-ca-file": "junk"}, wantMsg: "no certificate"},
		{name: "complete", code: 200, data: map[string]string{"requestheader-client-ca-file": string(proxyCA.CertPEM)}, wantReady: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := newKubeStandIn(t)
			k.set(func(k *kubeStandIn) { k.cmCode, k.configMap = tt.code, tt.data })
			d, err := authn.NewDelegated(authn.DelegatedConfig{Client: k.client(t), TolerateMissingRequestHeaderCA: tt.tolerate})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Ready(t.Context()); !errors.Is(err, authn.ErrNotReady) {
				t.Errorf("before sync: %v", err)
			}
			_ = d.Sync(t.Context())
			err = d.Ready(t.Context())
			if tt.wantReady != (err == nil) {
				t.Fatalf("Ready = %v", err)
			}
			if !tt.wantReady && (!errors.Is(err, authn.ErrNotReady) || !strings.Contains(err.Error(), tt.wantMsg)) {
				t.Errorf("Ready = %v, want ErrNotReady mentioning %q", err, tt.wantMsg)
			}
		})
	}
}

// TestDelegated_end_to_end reads the ConfigMap from the stand-in, serves a
// front-proxy request with its settings, then changes the ConfigMap and sees
// the new header names and allowed names apply without a restart, and a
// lookup failure keep the last good settings.
func TestDelegated_end_to_end(t *testing.T) {
	t.Parallel()
	proxyCA, err := certs.NewCA(certs.CAConfig{})
	if err != nil {
		t.Fatal(err)
	}
	clientCA, err := certs.NewCA(certs.CAConfig{})
	if err != nil {
		t.Fatal(err)
	}
	k := newKubeStandIn(t)
	k.set(func(k *kubeStandIn) {
		k.configMap = map[string]string{
			"client-ca-file":                     string(clientCA.CertPEM),
			"requestheader-client-ca-file":       string(proxyCA.CertPEM),
			"requestheader-allowed-names":        `["front-proxy-client"]`,
			"requestheader-username-headers":     `["X-Remote-User"]`,
			"requestheader-group-headers":        `["X-Remote-Group"]`,
			"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
			"requestheader-uid-headers":          `[]`,
		}
	})
	d, err := authn.NewDelegated(authn.DelegatedConfig{Client: k.client(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := d.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	a, err := authn.New(authn.Config{
		RequestHeader: &authn.RequestHeaderConfig{CA: d.RequestHeaderCA(), Names: d},
		ClientCA:      d.ClientCA(),
	})
	if err != nil {
		t.Fatal(err)
	}
	proxy := issue(t, proxyCA, certs.Request{CommonName: "front-proxy-client"})
	req := func(hdr http.Header) (string, bool, error) {
		r := httptest.NewRequest("GET", "/apis/x/v1/y", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{proxy.Cert}}
		r.Header = hdr
		u, ok, err := a.Authenticate(r)
		if u == nil {
			return "", ok, err
		}
		return u.Name, ok, err
	}
	if name, ok, err := req(http.Header{"X-Remote-User": {"alice"}}); !ok || err != nil || name != "alice" {
		t.Fatalf("initial: %q %v %v", name, ok, err)
	}
	if n := d.RequestHeaderNames(); len(n.UIDHeaders) != 0 || !reflect.DeepEqual(n.AllowedNames, []string{"front-proxy-client"}) {
		t.Errorf("names %+v", n)
	}
	// kube-apiserver is reconfigured: other header, other allowed name.
	k.set(func(k *kubeStandIn) {
		k.configMap["requestheader-username-headers"] = `["X-Aggregator-User"]`
		k.configMap["requestheader-allowed-names"] = `["aggregator"]`
	})
	if err := d.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := req(http.Header{"X-Aggregator-User": {"alice"}}); !errors.Is(err, authn.ErrNotAllowedProxy) {
		t.Errorf("after allowed-names change: err = %v, want ErrNotAllowedProxy", err)
	}
	k.set(func(k *kubeStandIn) { k.configMap["requestheader-allowed-names"] = `[]` })
	if err := d.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if name, ok, err := req(http.Header{"X-Remote-User": {"alice"}}); ok || name != "" {
		t.Errorf("old header still trusted: %q %v %v", name, ok, err)
	}
	if name, ok, err := req(http.Header{"X-Aggregator-User": {"bob"}}); !ok || err != nil || name != "bob" {
		t.Errorf("new header: %q %v %v", name, ok, err)
	}
	// The cluster becomes unreachable: the last good settings stay.
	k.set(func(k *kubeStandIn) { k.down = true })
	if err := d.Sync(t.Context()); err == nil {
		t.Error("sync against a down cluster succeeded")
	}
	if name, ok, err := req(http.Header{"X-Aggregator-User": {"bob"}}); !ok || err != nil || name != "bob" {
		t.Errorf("after outage: %q %v %v", name, ok, err)
	}
	if err := authn.CheckDistinctCAs(d.ClientCA(), d.RequestHeaderCA()); err != nil {
		t.Errorf("distinct CAs reported shared: %v", err)
	}
}
