package rest

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/annexapi/annex/storage"
)

// BenchmarkDelete measures one DELETE through the handler from bbolt
// (without fsync) of an object without finalizers, the common case: the
// objects are created beforehand, outside the timer.
func BenchmarkDelete(b *testing.B) {
	h, _, _ := benchWriteHandler(b, nil)
	s := h.resources[resourceKey{"platform.example.com", "v1alpha1", "environments"}].Storage
	ctx := context.Background()
	names := make([]string, 0, b.N)
	for i := range b.N {
		name := "del-" + strconv.Itoa(i)
		obj := `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"` + name +
			`","namespace":"ns1","labels":{"app":"bench"}},"spec":{"owner":"alice","tier":"dev","replicas":1}}`
		if _, err := s.Create(ctx, storage.ObjectKey("platform.example.com", "environments", "ns1", name), []byte(obj)); err != nil {
			b.Fatal(err)
		}
		names = append(names, name)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r := benchWriteRequest(b, "DELETE", envBase+"/namespaces/ns1/environments/"+names[i], "application/json")
		w := &discardWriter{h: http.Header{}}
		h.ServeHTTP(w, r)
		if w.code != http.StatusOK {
			b.Fatalf("delete: %d", w.code)
		}
	}
}
