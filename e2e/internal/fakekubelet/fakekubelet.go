package fakekubelet

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/annexapi/annex/certs"
)

// Usage is a constant usage: CPU in cores, memory working set in bytes.
type Usage struct {
	CPUCores    float64
	MemoryBytes uint64
}

// Container is one container of a pod.
type Container struct {
	Name string
	Usage
}

// Pod is one pod on the node.
type Pod struct {
	Namespace, Name string
	Containers      []Container
}

// State is what the kubelet reports.
type State struct {
	Node Usage
	Pods []Pod
}

// Kubelet is one fake kubelet.
type Kubelet struct {
	// Port is the port it listens on (127.0.0.1).
	Port int
	// Scrapes counts the requests for /metrics/resource it answered 200.
	Scrapes atomic.Int64

	srv *http.Server
	ln  net.Listener

	mu       sync.Mutex
	state    State
	counters map[string]*counter // series key -> counter
	now      func() time.Time
	// sampled is when a scrape first served the state last Set (zero
	// until one has).
	sampled time.Time
}

// counter is a cumulative CPU counter growing at rate core-seconds per
// second since since, from base; started is the container's start time.
type counter struct {
	base    float64
	since   time.Time
	rate    float64
	started time.Time
}

// at is the counter's value at t, in whole core-nanoseconds (as a kubelet's
// cAdvisor counts them) so that two samples' difference is exact.
func (c *counter) at(t time.Time) float64 {
	ns := math.Round(c.base*1e9) + math.Round(c.rate*float64(t.Sub(c.since).Nanoseconds()))
	return ns / 1e9
}

// CA is a serving CA for fake kubelets.
type CA struct {
	ca *certs.CA
	// CertPEM is the CA certificate (--kubelet-certificate-authority).
	CertPEM []byte
}

// NewCA makes a CA whose certificates are valid for 127.0.0.1.
func NewCA() (*CA, error) {
	ca, err := certs.NewCA(certs.CAConfig{Name: "fake-kubelet-ca"})
	if err != nil {
		return nil, err
	}
	return &CA{ca: ca, CertPEM: ca.CertPEM}, nil
}

// Start serves a kubelet on 127.0.0.1 with a certificate of ca; clientCAs
// verify the scraper's client certificate (nil: none asked for).
func Start(ca *CA, clientCAs *x509.CertPool, state State) (*Kubelet, error) {
	kp, err := ca.ca.Issue(certs.Request{CommonName: "fake-kubelet", IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	k := &Kubelet{Port: ln.Addr().(*net.TCPAddr).Port, ln: ln, counters: map[string]*counter{}, now: time.Now}
	k.Set(state)
	tc := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{kp.TLSCertificate()}}
	if clientCAs != nil {
		tc.ClientAuth, tc.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics/resource", k.serve)
	k.srv = &http.Server{Handler: mux, TLSConfig: tc, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = k.srv.ServeTLS(ln, "", "") }()
	return k, nil
}

// Sampled is when a scrape first served the state last Set (the first
// sample of the new usage), or zero when none has yet.
func (k *Kubelet) Sampled() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.sampled
}

// Close stops the kubelet.
func (k *Kubelet) Close() error { return k.srv.Close() }

// Set replaces the usage reported from now on; counters keep their values
// and grow at the new rates.
func (k *Kubelet) Set(s State) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	k.state, k.sampled = s, time.Time{}
	rates := map[string]float64{"": s.Node.CPUCores}
	for _, p := range s.Pods {
		for _, c := range p.Containers {
			rates[containerLabels(p, c)] = c.CPUCores
		}
	}
	for key, rate := range rates {
		c := k.counters[key]
		if c == nil {
			// A container has been running for an hour and used a
			// core-second by its first scrape: its start time stays put
			// when its usage changes (a scraper that trusts the start time,
			// as metrics-server's does, sees no restart), and is old enough
			// that no scraper takes it for a fresh container whose counter
			// began at zero.
			c = &counter{base: 1, since: now, started: now.Add(-time.Hour)}
			k.counters[key] = c
		}
		c.base, c.since, c.rate = c.at(now), now, rate
	}
}

func containerLabels(p Pod, c Container) string {
	return fmt.Sprintf(`container=%q,namespace=%q,pod=%q`, c.Name, p.Namespace, p.Name)
}

// serve writes /metrics/resource as a kubelet does: its families in name
// order, series in label order, encoded by expfmt in the format negotiated
// from the Accept header as promhttp negotiates it (the kubelet's
// component-base metrics.HandlerFor is promhttp.HandlerFor): the delimited
// protobuf format when asked for it, the text format otherwise.
func (k *Kubelet) serve(w http.ResponseWriter, r *http.Request) {
	families := k.families()
	format := expfmt.NegotiateAccept(r.Header, expfmt.DefaultAcceptedFormats()...)
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, format)
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Add("Vary", "Accept")
	w.Header().Set("Content-Type", string(format))
	_, _ = w.Write(b.Bytes())
	k.Scrapes.Add(1)
}

// families is what the kubelet reports now, as metric families.
func (k *Kubelet) families() []*dto.MetricFamily {
	k.mu.Lock()
	defer k.mu.Unlock()
	// At the millisecond the timestamps say, so that a rate between two
	// samples is exactly the configured one.
	now := k.now().Truncate(time.Millisecond)
	ts := now.UnixMilli()
	family := func(name string, typ dto.MetricType, help string) *dto.MetricFamily {
		return &dto.MetricFamily{Name: proto.String(name), Help: proto.String("[STABLE] " + help), Type: typ.Enum()}
	}
	// sample adds a series; labels are name, value pairs in name order.
	sample := func(f *dto.MetricFamily, v float64, labels ...string) {
		m := &dto.Metric{TimestampMs: proto.Int64(ts)}
		for i := 0; i < len(labels); i += 2 {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(labels[i]), Value: proto.String(labels[i+1])})
		}
		if f.GetType() == dto.MetricType_COUNTER {
			m.Counter = &dto.Counter{Value: proto.Float64(v)}
		} else {
			m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
		}
		f.Metric = append(f.Metric, m)
	}
	counter, gauge := dto.MetricType_COUNTER, dto.MetricType_GAUGE
	cpu := family("container_cpu_usage_seconds_total", counter, "Cumulative cpu time consumed by the container in core-seconds")
	mem := family("container_memory_working_set_bytes", gauge, "Current working set of the container in bytes")
	start := family("container_start_time_seconds", gauge, "Start time of the container since unix epoch in seconds")
	nodeCPU := family("node_cpu_usage_seconds_total", counter, "Cumulative cpu time consumed by the node in core-seconds")
	nodeMem := family("node_memory_working_set_bytes", gauge, "Current working set of the node in bytes")
	podCPU := family("pod_cpu_usage_seconds_total", counter, "Cumulative cpu time consumed by the pod in core-seconds")
	podMem := family("pod_memory_working_set_bytes", gauge, "Current working set of the pod in bytes")
	scrapeErr := family("resource_scrape_error", gauge, "1 if there was an error while getting container metrics, 0 otherwise")
	pods := append([]Pod(nil), k.state.Pods...)
	sort.Slice(pods, func(i, j int) bool {
		return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name
	})
	for _, p := range pods {
		var pc float64
		var pm uint64
		for _, c := range p.Containers {
			ctr := k.counters[containerLabels(p, c)]
			v := ctr.at(now)
			pc += v
			pm += c.MemoryBytes
			labels := []string{"container", c.Name, "namespace", p.Namespace, "pod", p.Name}
			sample(cpu, v, labels...)
			sample(mem, float64(c.MemoryBytes), labels...)
			sample(start, float64(ctr.started.Unix()), labels...)
		}
		sample(podCPU, pc, "namespace", p.Namespace, "pod", p.Name)
		sample(podMem, float64(pm), "namespace", p.Namespace, "pod", p.Name)
	}
	sample(nodeCPU, k.counters[""].at(now))
	sample(nodeMem, float64(k.state.Node.MemoryBytes))
	sample(scrapeErr, 0)
	scrapeErr.Metric[0].TimestampMs = nil // the kubelet's has none
	if k.sampled.IsZero() {
		k.sampled = now
	}
	return []*dto.MetricFamily{cpu, mem, start, nodeCPU, nodeMem, podCPU, podMem, scrapeErr}
}
