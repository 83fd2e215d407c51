package authn_test

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/certs"
)

// pki is the certificate material the tests share: a client CA, an
// intermediate under it, and an unrelated CA.
type pki struct {
	ca, intermediate, stranger *certs.CA
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	ca, err := certs.NewCA(certs.CAConfig{Name: "client-ca"})
	if err != nil {
		t.Fatal(err)
	}
	inter, err := ca.IssueCA("intermediate", 0)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := certs.NewCA(certs.CAConfig{Name: "stranger"})
	if err != nil {
		t.Fatal(err)
	}
	return &pki{ca: ca, intermediate: inter, stranger: stranger}
}

func issue(t *testing.T, ca *certs.CA, req certs.Request) *certs.KeyPair {
	t.Helper()
	kp, err := ca.Issue(req)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func uidName(v any) pkix.AttributeTypeAndValue {
	return pkix.AttributeTypeAndValue{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}, Value: v}
}

func TestX509_Authenticate(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	good := issue(t, p.ca, certs.Request{CommonName: "alice", Organization: []string{"dev", "ops"}})
	viaInter := issue(t, p.intermediate, certs.Request{CommonName: "carol"})
	tests := []struct {
		name       string
		chain      []*x509.Certificate
		pool       *x509.CertPool
		wantOK     bool
		wantErr    error
		wantUser   string
		wantUID    string
		wantGroups []string
	}{
		{name: "verified", chain: []*x509.Certificate{good.Cert}, wantOK: true, wantUser: "alice", wantGroups: []string{"dev", "ops"}},
		{name: "via_peer_intermediate", chain: []*x509.Certificate{viaInter.Cert, p.intermediate.Cert}, wantOK: true, wantUser: "carol"},
		{name: "intermediate_not_sent", chain: []*x509.Certificate{viaInter.Cert}, wantErr: authn.ErrInvalidCertificate},
		{name: "unknown_ca", chain: []*x509.Certificate{issue(t, p.stranger, certs.Request{CommonName: "mallory"}).Cert}, wantErr: authn.ErrInvalidCertificate},
		{name: "expired", chain: []*x509.Certificate{issue(t, p.ca, certs.Request{CommonName: "old", Validity: -time.Hour}).Cert}, wantErr: authn.ErrInvalidCertificate},
		{name: "server_auth_only", chain: []*x509.Certificate{issue(t, p.ca, certs.Request{CommonName: "srv",
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}).Cert}, wantErr: authn.ErrInvalidCertificate},
		{name: "empty_cn_is_not_ok", chain: []*x509.Certificate{issue(t, p.ca, certs.Request{Organization: []string{"g"}}).Cert}, wantOK: false},
		{name: "no_certificate", wantOK: false},
		{name: "no_pool_yet", chain: []*x509.Certificate{good.Cert}, pool: nil, wantOK: false},
		{name: "uid_from_subject", chain: []*x509.Certificate{issue(t, p.ca, certs.Request{CommonName: "dave",
			ExtraSubjectNames: []pkix.AttributeTypeAndValue{uidName("uid-42")}}).Cert}, wantOK: true, wantUser: "dave", wantUID: "uid-42"},
		{name: "two_uids", chain: []*x509.Certificate{issue(t, p.ca, certs.Request{CommonName: "dave",
			ExtraSubjectNames: []pkix.AttributeTypeAndValue{uidName("a"), uidName("b")}}).Cert}, wantErr: authn.ErrInvalidUID},
		{name: "empty_uid", chain: []*x509.Certificate{issue(t, p.ca, certs.Request{CommonName: "dave",
			ExtraSubjectNames: []pkix.AttributeTypeAndValue{uidName("")}}).Cert}, wantErr: authn.ErrInvalidUID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := p.ca.Pool()
			if tt.name == "no_pool_yet" {
				pool = tt.pool
			}
			a, err := authn.NewX509(authn.X509Config{CA: authn.StaticCA(pool)})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest("GET", "https://x/apis", nil)
			if tt.chain != nil {
				req.TLS = &tls.ConnectionState{PeerCertificates: tt.chain}
			} else {
				req.TLS = &tls.ConnectionState{}
			}
			u, ok, err := a.Authenticate(req)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || ok {
					t.Fatalf("ok=%v err=%v, want error %v", ok, err, tt.wantErr)
				}
				return
			}
			if err != nil || ok != tt.wantOK {
				t.Fatalf("ok=%v err=%v, want ok=%v", ok, err, tt.wantOK)
			}
			if !ok {
				return
			}
			sum := sha256.Sum256(tt.chain[0].Raw)
			wantExtra := map[string][]string{"authentication.kubernetes.io/credential-id": {"X509SHA256=" + hex.EncodeToString(sum[:])}}
			if u.Name != tt.wantUser || u.UID != tt.wantUID || !reflect.DeepEqual(u.Groups, tt.wantGroups) || !reflect.DeepEqual(u.Extra, wantExtra) {
				t.Errorf("user = %+v", u)
			}
		})
	}
}

func TestX509_error_names_certificate(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	bad := issue(t, p.stranger, certs.Request{CommonName: "mallory"})
	a, err := authn.NewX509(authn.X509Config{CA: authn.StaticCA(p.ca.Pool())})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{bad.Cert}}
	_, _, err = a.Authenticate(req)
	var ce *authn.CertificateError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %T %v, want *CertificateError", err, err)
	}
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("err does not unwrap to x509.UnknownAuthorityError: %v", err)
	}
	// The AKID is the stranger CA's SKID, upper-case hex pairs with colons.
	if len(bad.Cert.AuthorityKeyId) == 0 {
		t.Fatal("issued certificate has no AKID")
	}
	akid := ""
	for i, b := range bad.Cert.AuthorityKeyId {
		if i > 0 {
			akid += ":"
		}
		akid += fmt.Sprintf("%02X", b)
	}
	want := "verifying certificate SN=" + bad.Cert.SerialNumber.String() + ", SKID=, AKID=" + akid + " failed: " + unknown.Error()
	if got := err.Error(); got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}
