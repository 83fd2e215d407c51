package authn_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/filters"
)

// FuzzRequestHeaders feeds arbitrary header names and values to the
// front-proxy header reader and the clearing: it must not panic, a user
// must have a name taken from a user header, and after clearing no header
// the settings name may remain.
func FuzzRequestHeaders(f *testing.F) {
	f.Add("X-Remote-User", "alice", "X-Remote-Extra-Acme.com%2fProject", "p1")
	f.Add("x-remote-user", "", "X-REMOTE-EXTRA-%zz", "v")
	f.Add("X-Remote-Group", "system:masters", "X-Remote-Extra-", "")
	f.Add("X-Remote-Uid", "u", "X-Remote-Extra-%2F%2e%2e", "..")
	n := authn.StaticRequestHeaderNames(authn.RequestHeaderNames{UIDHeaders: []string{"X-Remote-Uid"}}).RequestHeaderNames()
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		h := http.Header{}
		h[k1] = append(h[k1], v1)
		h[k2] = append(h[k2], v2)
		h.Add(k1, v1) // also the canonical form
		u, ok, err := authn.UserFromRequestHeaders(h, n)
		if err != nil {
			t.Fatalf("error %v", err)
		}
		if ok && (u == nil || u.Name == "" || u.Name != h.Get("X-Remote-User")) {
			t.Fatalf("user %+v from %v", u, h)
		}
		if ok {
			for key := range u.Extra {
				if strings.ToLower(key) != key && !strings.Contains(key, "%") && authn.UnescapeExtraKey(strings.ToLower(key)) == key {
					t.Fatalf("extra key %q not lower-cased", key)
				}
			}
		}
		authn.ClearRequestHeaders(h, n)
		for k := range h {
			lk := strings.ToLower(k)
			if lk == "x-remote-user" || lk == "x-remote-group" || lk == "x-remote-uid" || strings.HasPrefix(lk, "x-remote-extra-") {
				t.Fatalf("header %q survived clearing", k)
			}
		}
	})
}

// FuzzBearerToken feeds arbitrary Authorization headers to the bearer
// authenticator: never a panic, a user only for the exact known token, and
// the header deleted exactly when a user was returned.
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer good", "bearer  good", "Bearer", "Basic x", " Bearer good extra", "Bearer\tgood", ""} {
		f.Add(s)
	}
	b := authn.NewBearerToken(authn.TokenAuthenticatorFunc(func(_ context.Context, tok string) (*filters.User, bool, error) {
		if tok == "good" {
			return &filters.User{Name: "alice"}, true, nil
		}
		return nil, false, nil
	}))
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header["Authorization"] = []string{header}
		u, ok, err := b.Authenticate(r)
		if ok && (u.Name != "alice" || err != nil) {
			t.Fatalf("%q: %+v %v", header, u, err)
		}
		// Kubernetes' reading: trimmed, split on spaces into at most
		// three parts, the second is the token.
		parts := strings.SplitN(strings.TrimSpace(header), " ", 3)
		if want := len(parts) >= 2 && strings.EqualFold(parts[0], "bearer") && parts[1] == "good"; ok != want {
			t.Fatalf("%q: ok=%v, Kubernetes' reading gives %v", header, ok, want)
		}
		if header != "" && ok != (r.Header.Get("Authorization") == "") {
			t.Fatalf("%q: ok=%v but header is %q", header, ok, r.Header.Get("Authorization"))
		}
	})
}
