// Package annextest runs a real annex server, built from an annex.Builder,
// in the test's process on a free loopback port, with an admin client: what
// net/http/httptest is to net/http and envtest to controller-runtime, with
// no binary to download.
//
// # Usage
//
// [Start] builds and runs the server for one test and stops it when the
// test ends; [NewServer] does the same for code without a testing.TB (a
// TestMain, an example) and is stopped with [Server.Close].
//
//	func TestWidgets(t *testing.T) {
//		srv := annextest.Start(t, annex.Builder{Resources: []rest.Resource{{
//			Group: "example.annex.dev", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true,
//		}}})
//		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/apis/example.annex.dev/v1/namespaces/default/widgets", nil)
//		req.Header.Set("Accept", "application/json")
//		resp, err := srv.Client().Do(req)
//		// ...
//	}
//
// kubectl and client-go use [Server].Kubeconfig, the admin kubeconfig the
// server wrote.
//
// # Lifetimes
//
// The Builder is copied: NewServer fills, on the copy only, a listener on
// 127.0.0.1 at a free port, a temporary data directory and a no-op logger
// when they are unset. The server is ready (its /readyz answers 200: the
// store is open and every watch cache has its initial list) when NewServer
// returns, and runs until Close, which waits for Run to return and then
// removes the data directory if the kit made it; a DataDir given in the
// Builder is kept. To watch a graceful shutdown (/readyz failing, the
// drain), call [Server.Shutdown], which returns at once, and wait for
// [Server.Done]. A listener given in the Builder is the server's: Run
// closes it. Servers are independent, so tests using them can run in
// parallel.
//
// # Caveats
//
// The clients come from the kubeconfig the server writes, which it does in
// standalone mode only: no ClientCAFile, no Delegation, and a generated
// serving certificate. Otherwise the server runs as usual, but
// [Server.Client] and [Server.AnonymousClient] return nil and
// [Server].Kubeconfig is empty; the test brings its own clients, made with
// [Server.TLSConfig], which trusts the generated serving CA.
//
// The default listener is on the loopback interface (BindAddress and
// SecurePort are not used), so the server is reachable from this machine
// only: a kube-apiserver or kubectl in a container or VM cannot reach it. To
// be reached from elsewhere, give the Builder a Listener of your own (a
// Kubeconfig is then written for the address it has, and the generated
// serving certificate must name that host: ServingHosts).
package annextest
