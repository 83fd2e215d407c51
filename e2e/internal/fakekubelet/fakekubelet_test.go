package fakekubelet

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// TestNegotiation asks a fake kubelet as metrics-server does (no Accept
// header), as Prometheus does (protobuf first, text as the fallback) and
// for the text format only: the first and last get the exposition text
// byte for byte as a kubelet writes it, the second the same families in
// the delimited protobuf format.
func TestNegotiation(t *testing.T) {
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	k, err := Start(ca, nil, State{
		Node: Usage{CPUCores: 0.5, MemoryBytes: 2 << 30},
		Pods: []Pod{{Namespace: "ns", Name: "web", Containers: []Container{{Name: "app", Usage: Usage{CPUCores: 0.25, MemoryBytes: 64 << 20}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	at := time.UnixMilli(1700000000123)
	k.mu.Lock()
	k.now = func() time.Time { return at }
	k.counters = map[string]*counter{}
	state := k.state
	k.mu.Unlock()
	k.Set(state) // the counters start at the fixed time: 1 core-second each
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	get := func(accept string) (string, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(k.Port)+"/metrics/resource", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %s", resp.Status, err, body)
		}
		return resp.Header.Get("Content-Type"), body
	}
	ts := " 1700000000123\n"
	wantText := "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds\n" +
		"# TYPE container_cpu_usage_seconds_total counter\n" +
		`container_cpu_usage_seconds_total{container="app",namespace="ns",pod="web"} 1` + ts +
		"# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes\n" +
		"# TYPE container_memory_working_set_bytes gauge\n" +
		`container_memory_working_set_bytes{container="app",namespace="ns",pod="web"} 6.7108864e+07` + ts +
		"# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds\n" +
		"# TYPE container_start_time_seconds gauge\n" +
		`container_start_time_seconds{container="app",namespace="ns",pod="web"} 1.6999964e+09` + ts +
		"# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds\n" +
		"# TYPE node_cpu_usage_seconds_total counter\n" +
		"node_cpu_usage_seconds_total 1" + ts +
		"# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes\n" +
		"# TYPE node_memory_working_set_bytes gauge\n" +
		"node_memory_working_set_bytes 2.147483648e+09" + ts +
		"# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds\n" +
		"# TYPE pod_cpu_usage_seconds_total counter\n" +
		`pod_cpu_usage_seconds_total{namespace="ns",pod="web"} 1` + ts +
		"# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes\n" +
		"# TYPE pod_memory_working_set_bytes gauge\n" +
		`pod_memory_working_set_bytes{namespace="ns",pod="web"} 6.7108864e+07` + ts +
		"# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise\n" +
		"# TYPE resource_scrape_error gauge\n" +
		"resource_scrape_error 0\n"

	for _, tc := range []struct{ name, accept string }{
		{"no_accept_header", ""},
		{"text_only", "text/plain;version=0.0.4"},
	} {
		ct, body := get(tc.accept)
		if expfmt.ResponseFormat(http.Header{"Content-Type": {ct}}) != expfmt.FmtText {
			t.Errorf("%s: Content-Type %q, want the text format", tc.name, ct)
		}
		if string(body) != wantText {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, body, wantText)
		}
	}

	ct, body := get("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.1")
	format := expfmt.ResponseFormat(http.Header{"Content-Type": {ct}})
	if format != expfmt.FmtProtoDelim {
		t.Fatalf("Content-Type %q, want the delimited protobuf format", ct)
	}
	var got []*dto.MetricFamily
	dec := expfmt.NewDecoder(bytes.NewReader(body), format)
	for {
		var f dto.MetricFamily
		err := dec.Decode(&f)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, &f)
	}
	want, err := textFamilies(wantText)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d families in protobuf, %d in the text", len(got), len(want))
	}
	for i := range got {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("family %d: protobuf %v, text %v", i, got[i], want[i])
		}
	}
}

// textFamilies parses the exposition text, families in name order.
func textFamilies(text string) ([]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	var out []*dto.MetricFamily
	for _, name := range slices.Sorted(maps.Keys(families)) {
		out = append(out, families[name])
	}
	return out, nil
}
