package authn_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/filters"
)

// issuer is a local OIDC issuer: discovery, JWKS, and a signer.
type issuer struct {
	srv      *httptest.Server
	key      *rsa.PrivateKey
	kid      string
	jwksHits atomic.Int32
	rotated  atomic.Pointer[rsa.PrivateKey]
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key, kid: "k1"}
	mux := http.NewServeMux()
	is.srv = httptest.NewTLSServer(mux)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		is.jwksHits.Add(1)
		set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &is.key.PublicKey, KeyID: is.kid, Algorithm: "RS256", Use: "sig"}}}
		if k2 := is.rotated.Load(); k2 != nil {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k2.PublicKey, KeyID: "k2", Algorithm: "RS256", Use: "sig"})
		}
		_ = json.NewEncoder(w).Encode(set)
	})
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) sign(t *testing.T, key *rsa.PrivateKey, kid string, alg jose.SignatureAlgorithm, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestOIDC(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	now := time.Unix(1_800_000_000, 0)
	o, err := authn.NewOIDC(authn.OIDCConfig{IssuerURL: is.srv.URL, CAData: caPEMOf(is.srv), Audiences: []string{"annex"},
		UsernameClaim: "email", UsernamePrefix: "oidc:", GroupsClaim: "groups", GroupsPrefix: "oidc:",
		RequiredClaims: map[string]string{"tenant": "t1"}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	base := func() map[string]any {
		return map[string]any{"iss": is.srv.URL, "aud": "annex", "sub": "123", "email": "a@example.com", "email_verified": true,
			"groups": []string{"dev", "ops"}, "tenant": "t1", "exp": now.Add(time.Hour).Unix(), "iat": now.Add(-time.Minute).Unix()}
	}
	with := func(k string, v any) map[string]any {
		c := base()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		token   string
		want    *filters.User
		wantErr bool
	}{
		{name: "valid", token: is.sign(t, is.key, "k1", jose.RS256, base()),
			want: &filters.User{Name: "oidc:a@example.com", Groups: []string{"oidc:dev", "oidc:ops"}}},
		{name: "single_group_string", token: is.sign(t, is.key, "k1", jose.RS256, with("groups", "solo")),
			want: &filters.User{Name: "oidc:a@example.com", Groups: []string{"oidc:solo"}}},
		{name: "other_issuer_not_ok", token: is.sign(t, is.key, "k1", jose.RS256, with("iss", "https://elsewhere"))},
		{name: "not_a_jwt_not_ok", token: "opaque-token"},
		{name: "json_serialization_not_ok", token: `{"payload":"x"}`},
		{name: "wrong_audience", token: is.sign(t, is.key, "k1", jose.RS256, with("aud", "other")), wantErr: true},
		{name: "expired", token: is.sign(t, is.key, "k1", jose.RS256, with("exp", now.Add(-time.Second).Unix())), wantErr: true},
		{name: "no_exp", token: is.sign(t, is.key, "k1", jose.RS256, with("exp", nil)), wantErr: true},
		{name: "not_yet_valid", token: is.sign(t, is.key, "k1", jose.RS256, with("nbf", now.Add(time.Hour).Unix())), wantErr: true},
		{name: "signed_by_unknown_key", token: is.sign(t, other, "k1", jose.RS256, base()), wantErr: true},
		{name: "algorithm_not_allowed", token: is.sign(t, is.key, "k1", jose.PS256, base())},
		{name: "email_not_verified", token: is.sign(t, is.key, "k1", jose.RS256, with("email_verified", false)), wantErr: true},
		{name: "required_claim_missing", token: is.sign(t, is.key, "k1", jose.RS256, with("tenant", nil)), wantErr: true},
		{name: "groups_wrong_type", token: is.sign(t, is.key, "k1", jose.RS256, with("groups", 7)), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, ok, err := o.AuthenticateToken(t.Context(), tt.token)
			if (err != nil) != tt.wantErr || ok != (tt.want != nil) || !reflect.DeepEqual(u, tt.want) {
				t.Errorf("got %+v %v %v", u, ok, err)
			}
			if err != nil && !errors.Is(err, authn.ErrOIDC) {
				t.Errorf("err %v does not wrap ErrOIDC", err)
			}
		})
	}
}

func TestOIDC_key_rotation_refetches_jwks(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	clk := &clock{now: time.Unix(1_800_000_000, 0)}
	o, err := authn.NewOIDC(authn.OIDCConfig{IssuerURL: is.srv.URL, CAData: caPEMOf(is.srv), Audiences: []string{"annex"}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]any{"iss": is.srv.URL, "aud": "annex", "sub": "u1", "exp": clk.Now().Add(time.Hour).Unix()}
	if _, ok, err := o.AuthenticateToken(t.Context(), is.sign(t, is.key, "k1", jose.RS256, claims)); !ok || err != nil {
		t.Fatalf("k1: %v %v", ok, err)
	}
	k2, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is.rotated.Store(k2)
	clk.Add(11 * time.Second)
	u, ok, err := o.AuthenticateToken(t.Context(), is.sign(t, k2, "k2", jose.RS256, claims))
	if !ok || err != nil || u.Name != "u1" {
		t.Fatalf("k2 after rotation: %+v %v %v", u, ok, err)
	}
	hits := is.jwksHits.Load()
	// An unknown kid within 10s of the last fetch does not hit the issuer again.
	if _, _, err := o.AuthenticateToken(t.Context(), is.sign(t, k2, "k3", jose.RS256, claims)); err == nil {
		t.Error("unknown kid accepted")
	}
	if is.jwksHits.Load() != hits {
		t.Errorf("JWKS fetched again within the retry interval")
	}
}

func TestNewOIDC_rejects(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]authn.OIDCConfig{
		"http_issuer": {IssuerURL: "http://x", Audiences: []string{"a"}},
		"no_audience": {IssuerURL: "https://x"},
		"hs256":       {IssuerURL: "https://x", Audiences: []string{"a"}, SigningAlgorithms: []string{"HS256"}},
		"none":        {IssuerURL: "https://x", Audiences: []string{"a"}, SigningAlgorithms: []string{"none"}},
	} {
		if _, err := authn.NewOIDC(cfg); !errors.Is(err, authn.ErrOIDC) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
