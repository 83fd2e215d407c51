package annex_test

import (
	"bufio"
	"crypto/tls"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricFamilies scrapes /metrics of a server that served creates,
// reads, a watch and a failed TLS handshake, and checks each of kube's
// families that dashboards and alerts use: name, type and label names.
func TestMetricFamilies(t *testing.T) {
	t.Parallel()
	ts := startServer(t, annex.Builder{})
	url := ts.URL
	coll := url + "/apis/test.annex.dev/v1/namespaces/m/widgets"
	if code, body := do(t, ts.Client(), "POST", coll, `{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"w"}}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	do(t, ts.Client(), "GET", coll+"/w", "")
	do(t, ts.Client(), "GET", coll, "")
	// A watch that receives one event.
	req, _ := http.NewRequest("GET", coll+"?watch=1&timeoutSeconds=5", nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if !bufio.NewScanner(resp.Body).Scan() {
		t.Fatal("no watch event")
	}
	resp.Body.Close()
	// A handshake that fails.
	if c, err := net.Dial("tcp", strings.TrimPrefix(url, "https://")); err == nil {
		_, _ = c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		_, _ = c.Read(make([]byte, 64))
		c.Close()
	}
	_, _ = tls.Dial("tcp", strings.TrimPrefix(url, "https://"), &tls.Config{MaxVersion: tls.VersionTLS10, InsecureSkipVerify: true})

	want := map[string]struct {
		typ    dto.MetricType
		labels []string
	}{
		"apiserver_request_total":                  {dto.MetricType_COUNTER, []string{"code", "component", "dry_run", "group", "resource", "scope", "subresource", "verb", "version"}},
		"apiserver_request_duration_seconds":       {dto.MetricType_HISTOGRAM, []string{"component", "dry_run", "group", "resource", "scope", "subresource", "verb", "version"}},
		"apiserver_request_sli_duration_seconds":   {dto.MetricType_HISTOGRAM, []string{"component", "group", "resource", "scope", "subresource", "verb", "version"}},
		"apiserver_current_inflight_requests":      {dto.MetricType_GAUGE, []string{"request_kind"}},
		"apiserver_longrunning_requests":           {dto.MetricType_GAUGE, []string{"component", "group", "resource", "scope", "subresource", "verb", "version"}},
		"apiserver_response_sizes":                 {dto.MetricType_HISTOGRAM, []string{"component", "group", "resource", "scope", "subresource", "verb", "version"}},
		"apiserver_storage_objects":                {dto.MetricType_GAUGE, []string{"resource"}},
		"apiserver_watch_events_total":             {dto.MetricType_COUNTER, []string{"group", "resource", "version"}},
		"apiserver_watch_events_sizes":             {dto.MetricType_HISTOGRAM, []string{"group", "resource", "version"}},
		"apiserver_registered_watchers":            {dto.MetricType_GAUGE, []string{"resource"}},
		"etcd_request_duration_seconds":            {dto.MetricType_HISTOGRAM, []string{"group", "operation", "resource"}},
		"apiserver_storage_db_total_size_in_bytes": {dto.MetricType_GAUGE, []string{"endpoint"}},
		"apiserver_tls_handshake_errors_total":     {dto.MetricType_COUNTER, nil},
		"go_goroutines":                            {dto.MetricType_GAUGE, nil},
		"process_resident_memory_bytes":            {dto.MetricType_GAUGE, nil},
	}
	code, body := do(t, ts.Client(), "GET", url+"/metrics", "")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		f, ok := families[name]
		if !ok || len(f.Metric) == 0 {
			t.Errorf("%s: missing", name)
			continue
		}
		if f.GetType() != w.typ {
			t.Errorf("%s: type %s, want %s", name, f.GetType(), w.typ)
		}
		var labels []string
		for _, l := range f.Metric[0].Label {
			labels = append(labels, l.GetName())
		}
		slices.Sort(labels)
		if !slices.Equal(labels, w.labels) {
			t.Errorf("%s: labels %v, want %v", name, labels, w.labels)
		}
	}
	if f := families["apiserver_tls_handshake_errors_total"]; f != nil && f.Metric[0].GetCounter().GetValue() < 1 {
		t.Error("the failed handshake was not counted")
	}
	if f := families["apiserver_storage_db_total_size_in_bytes"]; f != nil && f.Metric[0].GetGauge().GetValue() <= 0 {
		t.Error("the database size is not set")
	}
}
