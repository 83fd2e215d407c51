package annex_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/annextest"
	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/flowcontrol"
	"github.com/annexapi/annex/healthz"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/bbolt"
	"github.com/annexapi/annex/watch"
)

// exampleWidgets is the resource both servers of Example_byHand serve.
func exampleWidgets() rest.Resource {
	return rest.Resource{Group: "example.annex.dev", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true}
}

// Example_byHand builds a server without the Builder, from the exported
// pieces the Builder itself uses: TLS material (certs), a bbolt store with a
// watch cache (storage/bbolt, watch), the resource handler (rest), the front
// door (authn, authz), priority and fairness (flowcontrol), health (healthz),
// /version, and the stage table filled and chained (annex.DefaultStages,
// annex.SetFilter, annex.Chain). It then serves the same discovery as the
// Builder's server for the same resource and answers the same requests.
func Example_byHand() {
	dir, err := os.MkdirTemp("", "annex-by-hand")
	check(err)
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// TLS: a serving CA and certificate; a client CA and an admin
	// certificate in system:masters.
	servingCA, err := certs.EnsureCA(certs.CAConfig{Dir: dir, Name: "serving-ca"})
	check(err)
	_, err = servingCA.EnsureServingCert(certs.ServingConfig{Dir: dir})
	check(err)
	serving, err := certs.NewServingCert(filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key"), certs.ReloadConfig{})
	check(err)
	clientCA, err := certs.EnsureCA(certs.CAConfig{Dir: dir, Name: "client-ca"})
	check(err)
	_, err = clientCA.EnsureClientCert(certs.ClientConfig{Dir: dir, Name: "admin", User: "admin", Groups: []string{"system:masters"}})
	check(err)
	clientCAs, err := certs.NewCABundle(clientCA.CertFile, certs.ReloadConfig{})
	check(err)

	// Storage: bbolt, with the watch cache in front.
	store, err := bbolt.Open(filepath.Join(dir, "storage.db"), bbolt.Options{})
	check(err)
	defer store.Close()
	res := exampleWidgets()
	cache, err := watch.New(store, watch.Config{Prefix: storage.ResourcePrefix(res.Group, res.Plural, "")})
	check(err)
	go func() { _ = cache.Start(ctx) }()
	res.Storage = cache
	api, err := rest.NewHandler(rest.Config{Resources: []rest.Resource{res}})
	check(err)

	// The front door and priority and fairness (kube's defaults).
	authenticator, err := authn.New(authn.Config{ClientCA: clientCAs, Anonymous: &authn.AnonymousConfig{Paths: []string{"/healthz", "/livez", "/readyz"}}})
	check(err)
	authorizer, err := authz.New(authz.Config{}) // system:masters, and the health paths for everyone
	check(err)
	fc, err := flowcontrol.New(flowcontrol.Config{})
	check(err)
	go func() { _ = fc.Start(ctx) }()

	// The paths beside the API.
	ready, err := healthz.New("readyz", healthz.PingCheck(), healthz.ReadyCheck("watch-cache/widgets", cache))
	check(err)
	mux := http.NewServeMux()
	mux.Handle("/readyz", ready)
	mux.Handle("GET /version", annex.VersionInfo{}.Handler())
	mux.Handle("/", api)

	// The stage table of stages.go, filled and chained: Chain checks the
	// order as Build does.
	authnFilter, err := authn.WithAuthentication(authn.FilterConfig{Authenticator: authenticator})
	check(err)
	impersonation, err := authz.WithImpersonation(authz.ImpersonationConfig{Authorizer: authorizer})
	check(err)
	authzFilter, err := authz.WithAuthorization(authz.FilterConfig{Authorizer: authorizer})
	check(err)
	drain := filters.NewShutdownDrain(filters.ShutdownDrainConfig{})
	stages := annex.DefaultStages()
	for name, f := range map[string]annex.Filter{
		annex.StageStackGrowth:   filters.WithStackGrowth(),
		annex.StageShutdownDrain: drain.Filter,
		annex.StagePanicRecovery: filters.WithPanicRecovery(filters.PanicRecoveryConfig{}),
		annex.StageAuditID:       filters.WithAuditID(filters.AuditIDConfig{}),
		annex.StageRequestInfo: func(h http.Handler) http.Handler {
			return filters.WithRequestReceivedTimestamp(filters.RequestReceivedTimestampConfig{})(filters.WithRequestInfoResolver(filters.RequestInfoResolver{})(h))
		},
		annex.StageHeaders:        filters.WithCacheControl(filters.CacheControlConfig{}),
		annex.StageDeadline:       filters.WithRequestDeadline(filters.RequestDeadlineConfig{MaxTimeout: time.Minute}),
		annex.StageTimeout:        filters.WithRequestTimeout(filters.RequestTimeoutConfig{}),
		annex.StageBodyLimit:      filters.WithMaxRequestBody(filters.MaxRequestBodyConfig{}),
		annex.StageWarnings:       filters.WithWarningRecorder(filters.WarningRecorderConfig{}),
		annex.StageAuthentication: authnFilter,
		annex.StageImpersonation:  impersonation,
		annex.StageFlowControl:    fc.Filter,
		annex.StageAuthorization:  authzFilter,
	} {
		check(annex.SetFilter(stages, name, f))
	}
	handler, err := annex.Chain(stages, mux, annex.ChainOptions{})
	check(err)

	tlsConfig, err := certs.ServerTLSConfig(certs.ServerTLSOptions{Serving: serving, ClientCA: clientCAs})
	check(err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	srv := &http.Server{Handler: handler, TLSConfig: tlsConfig, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	defer srv.Close()
	byHand := "https://" + ln.Addr().String()
	admin := adminClient(filepath.Join(dir, "serving-ca.crt"), filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key"))
	waitReady(admin, byHand)

	// The same resource through the Builder.
	built, err := annextest.NewServer(annex.Builder{Resources: []rest.Resource{exampleWidgets()}})
	check(err)
	defer built.Close()

	discovery := "/apis/example.annex.dev/v1"
	_, handDoc := get(admin, byHand+discovery)
	_, builtDoc := get(built.Client(), built.URL+discovery)
	fmt.Println("same discovery:", handDoc == builtDoc)
	for _, s := range []struct {
		name   string
		client *http.Client
		url    string
	}{{"by hand", admin, byHand}, {"built", built.Client(), built.URL}} {
		list := s.url + "/apis/example.annex.dev/v1/namespaces/default/widgets"
		created := post(s.client, list, `{"apiVersion":"example.annex.dev/v1","kind":"Widget","metadata":{"name":"w1"}}`)
		got, body := get(s.client, list+"/w1")
		missing, _ := get(s.client, list+"/nope")
		fmt.Printf("%s: create %d, get %d (%v), missing %d\n", s.name, created, got, strings.Contains(body, `"name":"w1"`), missing)
	}
	// Output:
	// same discovery: true
	// by hand: create 201, get 200 (true), missing 404
	// built: create 201, get 200 (true), missing 404
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}

// adminClient trusts the serving CA and presents the admin certificate.
func adminClient(caFile, certFile, keyFile string) *http.Client {
	caPEM, err := os.ReadFile(caFile)
	check(err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	check(err)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}}
}

// waitReady polls /readyz until it answers 200 (the watch cache has its
// initial list).
func waitReady(c *http.Client, url string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _ := get(c, url+"/readyz"); code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			panic("not ready: " + url)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// get and post send what kubectl sends: Accept, User-Agent, Content-Type.
func get(c *http.Client, url string) (int, string) { return send(c, http.MethodGet, url, "") }

func post(c *http.Client, url, body string) int {
	code, _ := send(c, http.MethodPost, url, body)
	return code
}

func send(c *http.Client, method, url, body string) (int, string) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	check(err)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "kubectl/v1.33.0 (linux/amd64) kubernetes/annex-example")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	check(err)
	return resp.StatusCode, string(b)
}
