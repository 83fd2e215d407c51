package annex

import (
	"os"
	"testing"
)

func BenchmarkTmpGet(b *testing.B) {
	policy := ""
	if os.Getenv("AUDIT") != "" {
		policy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
	}
	s := startBenchServer(b, "x", policy)
	s.round(b, "get", 500, 8)
	b.ResetTimer()
	s.round(b, "get", b.N, 8)
	b.ReportMetric(float64(s.cpu["get"].Microseconds())/float64(b.N), "cpu-µs/req")
}
