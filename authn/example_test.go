package authn_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/filters"
)

// Example shows standalone mode's authentication: client certificates
// verified against the client CA, anonymous access to the health paths only.
func Example() {
	ca, err := certs.NewCA(certs.CAConfig{})
	if err != nil {
		log.Fatal(err)
	}
	a, err := authn.New(authn.Config{
		ClientCA:  authn.StaticCA(ca.Pool()), // certs.NewCABundle(file, ...) in a server
		Anonymous: &authn.AnonymousConfig{Paths: authn.StandaloneAnonymousPaths()},
	})
	if err != nil {
		log.Fatal(err)
	}
	authenticate, err := authn.WithAuthentication(authn.FilterConfig{Authenticator: a})
	if err != nil {
		log.Fatal(err)
	}
	h := authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := filters.UserFrom(r.Context())
		fmt.Fprintf(w, "%s %v", u.Name, u.Groups)
	}))

	for _, path := range []string{"/healthz", "/apis"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		fmt.Println(path, w.Code, w.Body.String())
	}
	// Output:
	// /healthz 200 system:anonymous [system:unauthenticated]
	// /apis 401 {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}
}
