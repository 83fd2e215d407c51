package filters_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/annexapi/annex/filters"
)

func Example() {
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, _ := filters.RequestInfoFrom(r.Context())
		filters.AddWarning(r.Context(), "v1beta1 is deprecated")
		fmt.Fprintf(w, "%s %s in %q", info.Verb, info.Resource, info.Namespace)
	})
	var h http.Handler = app
	for _, f := range []func(http.Handler) http.Handler{
		filters.WithWarningRecorder(filters.WarningRecorderConfig{}),
		filters.WithRequestTimeout(filters.RequestTimeoutConfig{}),
		filters.WithRequestDeadline(filters.RequestDeadlineConfig{}),
		filters.WithCacheControl(filters.CacheControlConfig{}),
		filters.WithRequestInfoResolver(filters.RequestInfoResolver{}),
		filters.WithPanicRecovery(filters.PanicRecoveryConfig{}),
		filters.WithAuditID(filters.AuditIDConfig{NewID: func() string { return "id-1" }}),
	} {
		h = f(h)
	}

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/apis/example.com/v1beta1/namespaces/team-a/widgets", nil))
	fmt.Println(w.Code, w.Body.String())
	fmt.Println(w.Header().Get("Warning"))
	fmt.Println(w.Header().Get("Cache-Control"), w.Header().Get("Audit-Id"))
	// Output:
	// 200 list widgets in "team-a"
	// 299 - "v1beta1 is deprecated"
	// no-cache, private id-1
}
