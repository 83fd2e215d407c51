package certs_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/annexapi/annex/certs"
)

// Example_standalone prepares what a standalone server needs on first start:
// a CA, a serving certificate, an admin client certificate and a kubeconfig.
// Later starts reuse the same files.
func Example_standalone() {
	dir, err := os.MkdirTemp("", "annex-data")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ca, err := certs.EnsureCA(certs.CAConfig{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	serving, err := ca.EnsureServingCert(certs.ServingConfig{Dir: dir, Hosts: []string{"annex.example"}})
	if err != nil {
		log.Fatal(err)
	}
	admin, err := ca.EnsureClientCert(certs.ClientConfig{Dir: dir, User: "annex-admin", Groups: []string{"system:masters"}})
	if err != nil {
		log.Fatal(err)
	}
	err = certs.WriteKubeconfig(filepath.Join(dir, "kubeconfig"), certs.Kubeconfig{
		Server: "https://127.0.0.1:8443", CAPEM: ca.CertPEM,
		ClientCertPEM: admin.CertPEM, ClientKeyPEM: admin.KeyPEM,
	})
	if err != nil {
		log.Fatal(err)
	}

	// The server reloads its certificate files when they change.
	sc, err := certs.NewServingCert(serving.CertFile, serving.KeyFile, certs.ReloadConfig{})
	if err != nil {
		log.Fatal(err)
	}
	clientCA, err := certs.NewCABundle(ca.CertFile, certs.ReloadConfig{})
	if err != nil {
		log.Fatal(err)
	}
	tlsConfig, err := certs.ServerTLSConfig(certs.ServerTLSOptions{Serving: sc, ClientCA: clientCA})
	if err != nil {
		log.Fatal(err)
	}

	again, err := ca.EnsureServingCert(certs.ServingConfig{Dir: dir, Hosts: []string{"annex.example"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(serving.Cert.DNSNames, len(serving.Cert.IPAddresses))
	fmt.Println("reused:", again.Cert.SerialNumber.Cmp(serving.Cert.SerialNumber) == 0)
	fmt.Println(tlsConfig.NextProtos)
	// Output:
	// [localhost annex.example] 2
	// reused: true
	// [h2 http/1.1]
}
