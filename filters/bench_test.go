package filters

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func BenchmarkResolve(b *testing.B) {
	for _, url := range []string{"/apis/example.com/v1/namespaces/ns/widgets/w1", "/apis/example.com/v1/widgets?watch=1&fieldSelector=metadata.name%3Dw1&labelSelector=a%3Db"} {
		r := httptest.NewRequest("GET", url, nil)
		b.Run(url, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (RequestInfoResolver{}).Resolve(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkChain(b *testing.B) {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	for _, f := range []func(http.Handler) http.Handler{
		WithMaxRequestBody(MaxRequestBodyConfig{}),
		WithWarningRecorder(WarningRecorderConfig{}),
		WithRequestTimeout(RequestTimeoutConfig{}),
		WithRequestDeadline(RequestDeadlineConfig{}),
		WithCacheControl(CacheControlConfig{}),
		WithRequestInfoResolver(RequestInfoResolver{}),
		WithRequestReceivedTimestamp(RequestReceivedTimestampConfig{}),
		WithPanicRecovery(PanicRecoveryConfig{}),
		WithAuditID(AuditIDConfig{}),
	} {
		h = f(h)
	}
	r := httptest.NewRequest("GET", "/apis/example.com/v1/namespaces/ns/widgets/w1", nil)
	ctx, cancel := context.WithTimeout(r.Context(), time.Hour)
	defer cancel()
	r = r.WithContext(ctx)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}
