package bbolt_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/bbolt"
)

// The embedded store on its own: create, update with optimistic
// concurrency (GuaranteedUpdate), read, and watch what changed. A server
// takes it as Builder.Storage (or opens one in its DataDir by default).
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "annex-bbolt")
	defer os.RemoveAll(dir)
	s, err := bbolt.Open(filepath.Join(dir, "storage.db"), bbolt.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx := context.Background()
	key := storage.ObjectKey("shop.example.com", "widgets", "default", "w1")
	created, err := s.Create(ctx, key, []byte(`{"metadata":{"name":"w1","namespace":"default"},"spec":{"color":"red"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	w, _ := s.Watch(ctx, storage.ResourcePrefix("shop.example.com", "widgets", ""), storage.WatchOptions{
		ResourceVersion: storage.FormatResourceVersion(created.ResourceVersion), Recursive: true})
	defer w.Stop()
	updated, _ := s.Update(ctx, key, storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
		return []byte(`{"metadata":{"name":"w1","namespace":"default","resourceVersion":"` + cur.Meta.ResourceVersion + `"},"spec":{"color":"blue"}}`), nil
	})
	got, _ := s.Get(ctx, key, storage.GetOptions{})
	ev := <-w.ResultChan()
	fmt.Println(updated.ResourceVersion > created.ResourceVersion, bytes.Contains(got.Data, []byte(`"blue"`)), ev.Type)
	// Output: true true MODIFIED
}
