package load

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/annexapi/annex/certs"
)

// floorCollection is the collection path the floor serves.
const floorCollection = "/apis/platform.example.com/v1beta1/namespaces/default/environments"

// StartFloor runs the floor of annex's stack in a process of its own
// (this executable's "floor-server" command, RunFloor): Go's net/http over
// TLS and HTTP/2 with client certificates, serving the environments
// example's objects as bytes from a map, with no filters, no
// authentication beyond the TLS handshake, no authorization, no admission
// and no storage. What annex costs above it is what its stages cost.
func StartFloor(ctx context.Context, dir string) (t Target, stop func(), err error) {
	ca, err := certs.NewCA(certs.CAConfig{Name: "annexload-floor-ca"})
	if err != nil {
		return t, nil, err
	}
	serving, err := ca.Issue(certs.Request{CommonName: "localhost", DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		return t, nil, err
	}
	client, err := ca.Issue(certs.Request{CommonName: "annexload-admin"})
	if err != nil {
		return t, nil, err
	}
	for name, b := range map[string][]byte{"ca.crt": ca.CertPEM, "serving.crt": serving.CertPEM, "serving.key": serving.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return t, nil, err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return t, nil, err
	}
	port, err := freePort()
	if err != nil {
		return t, nil, err
	}
	started := time.Now()
	stop, pid, err := startProcess(dir, "floor", self, "floor-server", "--dir", dir, "--port", strconv.Itoa(port))
	if err != nil {
		return t, nil, err
	}
	t = Target{Name: "floor", Minimal: true, PIDs: []int{pid},
		Collection: "https://127.0.0.1:" + strconv.Itoa(port) + floorCollection,
		TLS:        &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{client.TLSCertificate()}, MinVersion: tls.VersionTLS12},
		Object:     environment}
	if err := waitReady(t); err != nil {
		stop()
		return t, nil, err
	}
	t.Ready = time.Since(started)
	return t, stop, nil
}

// floor is the floor server's state: each object's bytes by name.
type floor struct {
	mu      sync.RWMutex
	objects map[string][]byte
}

// RunFloor serves the floor on 127.0.0.1:port with dir's certificates
// (ca.crt, serving.crt, serving.key) until the process ends.
func RunFloor(dir string, port int) error {
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("no certificate in %s", filepath.Join(dir, "ca.crt"))
	}
	f := &floor{objects: map[string][]byte{}}
	srv := &http.Server{
		Addr:              "127.0.0.1:" + strconv.Itoa(port),
		Handler:           f,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
	}
	return srv.ListenAndServeTLS("", "")
}

// ServeHTTP answers POST and GET on the collection, GET and PUT on an
// object: what the suite's create, GET, LIST and update scenarios send.
func (f *floor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, isObject := strings.CutPrefix(r.URL.Path, floorCollection+"/")
	if !isObject && r.URL.Path != floorCollection {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case !isObject && r.Method == http.MethodGet:
		f.list(w)
	case !isObject && r.Method == http.MethodPost:
		f.put(w, r, "", http.StatusCreated)
	case r.Method == http.MethodGet:
		f.mu.RLock()
		b, ok := f.objects[name]
		f.mu.RUnlock()
		if !ok {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		_, _ = w.Write(b)
	case r.Method == http.MethodPut:
		f.put(w, r, name, http.StatusOK)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// put stores the body under its metadata.name: a create (name empty) when
// it is new, an update when it is there.
func (f *floor) put(w http.ResponseWriter, r *http.Request, name string, code int) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var obj struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &obj); err != nil || obj.Metadata.Name == "" || (name != "" && name != obj.Metadata.Name) {
		http.Error(w, "bad object", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	_, exists := f.objects[obj.Metadata.Name]
	if exists == (name == "") {
		f.mu.Unlock()
		http.Error(w, "conflict", http.StatusConflict)
		return
	}
	if name == "" {
		// A create stores the object as annex stores and serves it
		// (metadata, managedFields, status): the same bytes to send.
		b = storedEnvironment(obj.Metadata.Name, len(f.objects)+2)
	}
	f.objects[obj.Metadata.Name] = b
	f.mu.Unlock()
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// list writes every object in name order in a List.
func (f *floor) list(w http.ResponseWriter) {
	f.mu.RLock()
	names := make([]string, 0, len(f.objects))
	for n := range f.objects {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	buf.WriteString(`{"kind":"EnvironmentList","apiVersion":"platform.example.com/v1beta1","metadata":{},"items":[`)
	for i, n := range names {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(f.objects[n])
	}
	f.mu.RUnlock()
	buf.WriteString("]}")
	_, _ = w.Write(buf.Bytes())
}

// storedEnvironment is environment(name) as the environments example
// stores and serves it (693 bytes for obj-1, as a GET answers).
func storedEnvironment(name string, rv int) []byte {
	const ts = "2026-11-27T00:07:34Z"
	return []byte(`{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"creationTimestamp":"` + ts +
		`","generation":1,"labels":{"app":"load","managed-by":"annex","team":"payments"},"managedFields":[{"apiVersion":"platform.example.com/v1beta1",` +
		`"fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:team":{}}},"f:spec":{".":{},"f:owners":{},"f:replicas":{},"f:tier":{}}},` +
		`"manager":"kubectl-create","operation":"Update","time":"` + ts + `"}],"name":"` + name + `","namespace":"default","uid":"` +
		fmt.Sprintf("23afdea9-781b-490a-8c02-%012d", rv) + `","resourceVersion":"` + strconv.Itoa(rv) +
		`"},"spec":{"owners":["payments-team"],"replicas":2,"tier":"dev"},"status":{"phase":"Pending"}}`)
}

// environment is the object the suite creates on annex and on the floor.
func environment(name string) []byte {
	return []byte(`{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"` + name +
		`","labels":{"app":"load","team":"payments"}},"spec":{"owners":["payments-team"],"tier":"dev","replicas":2}}`)
}
