package rest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/watch"
)

const betaBase = "/apis/platform.example.com/v1beta1"

// teamConversion renames spec.owner (v1alpha1) to spec.team (v1beta1, the
// hub); a spec.owner of "fail" makes the conversion fail.
func teamConversion() ConversionFuncs {
	move := func(from, to string) func(context.Context, Object) error {
		return func(_ context.Context, obj Object) error {
			spec, _ := obj["spec"].(map[string]any)
			if spec == nil {
				return nil
			}
			if v, ok := spec[from]; ok {
				if v == "fail" {
					return errors.New("owner fail cannot be converted")
				}
				spec[to] = v
				delete(spec, from)
			}
			return nil
		}
	}
	return ConversionFuncs{Funcs: map[string]VersionConversion{
		"v1alpha1": {ToHub: move("owner", "team"), FromHub: move("team", "owner")},
	}}
}

// twoVersions declares environments at v1alpha1 (deprecated, spec.owner)
// and v1beta1 (storage, spec.team), each with its schema, column and
// selectable field.
func twoVersions(s storage.Interface) []Resource {
	specOf := func(f string) *schema.Props {
		return &schema.Props{Type: "object", Properties: map[string]schema.Props{
			"spec": {Type: "object", Properties: map[string]schema.Props{
				f: {Type: "string"}, "tier": {Type: "string"}, "replicas": {Type: "integer"}}},
		}}
	}
	alpha := environmentResource(s)
	alpha.Schema = specOf("owner")
	alpha.Deprecated = true
	alpha.PrinterColumns = []PrinterColumn{{Name: "Owner", Type: "string", JSONPath: ".spec.owner"}}
	beta := environmentResource(s)
	beta.Version = "v1beta1"
	beta.Schema = specOf("team")
	beta.StorageVersion = true
	beta.Conversion = teamConversion()
	beta.PrinterColumns = []PrinterColumn{{Name: "Team", Type: "string", JSONPath: ".spec.team"}}
	beta.Strategy.SelectableFields = []string{"spec.team"}
	return []Resource{beta, alpha}
}

// newVersionedEnv serves twoVersions over a watch cache on bbolt, and
// counts conversions and encoded watch frames.
func newVersionedEnv(t *testing.T) (*testEnv, *handler) { return newVersionedEnvB(t) }

func newVersionedEnvB(t testing.TB) (*testEnv, *handler) {
	t.Helper()
	s := openStore(t)
	c, err := watch.New(s, watch.Config{Prefix: storage.ResourcePrefix("platform.example.com", "environments", "")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	for c.Ready(ctx) != nil {
		time.Sleep(time.Millisecond)
	}
	hh, err := NewHandler(Config{Resources: twoVersions(c)})
	if err != nil {
		t.Fatal(err)
	}
	h := hh.(*handler)
	h.conversions, h.frameEncodes = new(atomic.Int64), new(atomic.Int64)
	srv := httptest.NewServer(filters.WithRequestInfoResolver(filters.RequestInfoResolver{})(filters.WithWarningRecorder(filters.WarningRecorderConfig{})(h)))
	t.Cleanup(srv.Close)
	return &testEnv{store: s, srv: srv}, h
}

// raw reads an object's stored bytes from bbolt, under the cache.
func raw(t *testing.T, e *testEnv, name string) map[string]any {
	t.Helper()
	o, err := e.store.Get(context.Background(), storage.ObjectKey("platform.example.com", "environments", "ns", name), storage.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(o.Data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestVersionsWriteAnyReadAny(t *testing.T) {
	e, h := newVersionedEnv(t)
	// Written at v1alpha1: stored at v1beta1, answered at v1alpha1.
	r := e.do(t, "POST", envBase+"/namespaces/ns/environments",
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"a","labels":{"app":"x"}},"spec":{"owner":"ana","tier":"dev"}}`)
	if r.code != http.StatusCreated {
		t.Fatalf("create at v1alpha1: %d %s", r.code, r.body)
	}
	created := r.object(t)
	if created["apiVersion"] != "platform.example.com/v1alpha1" || fieldAt(created, "spec", "owner") != "ana" || fieldAt(created, "spec", "team") != nil {
		t.Fatalf("create answered %s", r.body)
	}
	if w := r.header.Get("Warning"); w != `299 - "platform.example.com/v1alpha1 Environment is deprecated; use platform.example.com/v1beta1 Environment"` {
		t.Errorf("Warning = %q", w)
	}
	stored := raw(t, e, "a")
	if stored["apiVersion"] != "platform.example.com/v1beta1" || fieldAt(stored, "spec", "team") != "ana" || fieldAt(stored, "spec", "owner") != nil {
		t.Fatalf("stored %v", stored)
	}
	// Read at v1beta1: the stored bytes as they are, no conversion.
	before := h.conversions.Load()
	r = e.do(t, "GET", betaBase+"/namespaces/ns/environments/a", "")
	if r.code != 200 || fieldAt(r.object(t), "spec", "team") != "ana" || r.header.Get("Warning") != "" {
		t.Fatalf("get at v1beta1: %d %s (warning %q)", r.code, r.body, r.header.Get("Warning"))
	}
	if n := h.conversions.Load() - before; n != 0 {
		t.Errorf("a read at the storage version converted %d objects", n)
	}
	// Metadata is the same at both versions.
	if fieldAt(r.object(t), "metadata", "uid") != fieldAt(created, "metadata", "uid") ||
		fieldAt(r.object(t), "metadata", "resourceVersion") != fieldAt(created, "metadata", "resourceVersion") {
		t.Errorf("metadata differs: %s vs %v", r.body, created["metadata"])
	}

	// Written at v1beta1 with a PUT, read at v1alpha1.
	beta := r.object(t)
	beta["spec"].(map[string]any)["team"] = "bo"
	b, _ := json.Marshal(beta)
	if r = e.do(t, "PUT", betaBase+"/namespaces/ns/environments/a", string(b)); r.code != 200 {
		t.Fatalf("put at v1beta1: %d %s", r.code, r.body)
	}
	r = e.do(t, "GET", envBase+"/namespaces/ns/environments/a", "")
	if got := r.object(t); got["apiVersion"] != "platform.example.com/v1alpha1" || fieldAt(got, "spec", "owner") != "bo" {
		t.Fatalf("get at v1alpha1 after the v1beta1 update: %s", r.body)
	}
	// A merge patch at v1alpha1 patches the v1alpha1 form.
	r = e.do(t, "PATCH", envBase+"/namespaces/ns/environments/a", `{"spec":{"owner":"cy"}}`, "Content-Type", "application/merge-patch+json")
	if r.code != 200 || fieldAt(r.object(t), "spec", "owner") != "cy" {
		t.Fatalf("merge patch at v1alpha1: %d %s", r.code, r.body)
	}
	if got := raw(t, e, "a"); fieldAt(got, "spec", "team") != "cy" || got["apiVersion"] != "platform.example.com/v1beta1" {
		t.Fatalf("stored after patch: %v", got)
	}
	// A body at the other version is refused, as k8s does.
	if r = e.do(t, "POST", envBase+"/namespaces/ns/environments", `{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"b"}}`); r.code != 400 {
		t.Errorf("v1beta1 body at v1alpha1: %d %s", r.code, r.body)
	}
}

func TestVersionsListSelectorsTable(t *testing.T) {
	e, _ := newVersionedEnv(t)
	for _, o := range [][2]string{{"a", "ana"}, {"b", "bo"}} {
		if r := e.do(t, "POST", betaBase+"/namespaces/ns/environments",
			`{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"`+o[0]+`"},"spec":{"team":"`+o[1]+`"}}`); r.code != 201 {
			t.Fatalf("create: %d %s", r.code, r.body)
		}
	}
	r := e.do(t, "GET", envBase+"/namespaces/ns/environments", "")
	list := r.object(t)
	items, _ := list["items"].([]any)
	if list["apiVersion"] != "platform.example.com/v1alpha1" || len(items) != 2 {
		t.Fatalf("list at v1alpha1: %s", r.body)
	}
	for _, it := range items {
		if o := it.(map[string]any); o["apiVersion"] != "platform.example.com/v1alpha1" || fieldAt(o, "spec", "owner") == nil {
			t.Errorf("item %v", o)
		}
	}
	// Each version selects on its own fields.
	r = e.do(t, "GET", envBase+"/namespaces/ns/environments?fieldSelector=spec.owner%3Dbo", "")
	if items, _ := r.object(t)["items"].([]any); len(items) != 1 || fieldAt(items[0].(map[string]any), "metadata", "name") != "b" {
		t.Errorf("spec.owner=bo at v1alpha1: %s", r.body)
	}
	r = e.do(t, "GET", betaBase+"/namespaces/ns/environments?fieldSelector=spec.team%3Dana", "")
	if items, _ := r.object(t)["items"].([]any); len(items) != 1 || fieldAt(items[0].(map[string]any), "metadata", "name") != "a" {
		t.Errorf("spec.team=ana at v1beta1: %s", r.body)
	}
	if r = e.do(t, "GET", betaBase+"/namespaces/ns/environments?fieldSelector=spec.owner%3Dana", ""); r.code != 400 {
		t.Errorf("spec.owner at v1beta1: %d %s", r.code, r.body)
	}
	// Table: each version's columns, read at that version.
	r = e.do(t, "GET", envBase+"/namespaces/ns/environments", "", "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	var tbl meta.Table
	if err := json.Unmarshal(r.body, &tbl); err != nil || len(tbl.Rows) != 2 || tbl.ColumnDefinitions[1].Name != "Owner" || tbl.Rows[0].Cells[1] != "ana" {
		t.Errorf("table at v1alpha1: %v %s", err, r.body)
	}
}

func TestVersionsWatchEncodesOncePerVersion(t *testing.T) {
	e, h := newVersionedEnv(t)
	var alpha, beta []*watchStream
	for range 3 {
		alpha = append(alpha, e.watch(t, envBase+"/namespaces/ns/environments?watch=true&resourceVersion=1"))
		beta = append(beta, e.watch(t, betaBase+"/namespaces/ns/environments?watch=true&resourceVersion=1"))
	}
	time.Sleep(100 * time.Millisecond) // the watches are registered
	start := h.frameEncodes.Load()
	if r := e.do(t, "POST", betaBase+"/namespaces/ns/environments",
		`{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"a"},"spec":{"team":"ana"}}`); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	if r := e.do(t, "PATCH", betaBase+"/namespaces/ns/environments/a", `{"spec":{"team":"bo"}}`, "Content-Type", "application/merge-patch+json"); r.code != 200 {
		t.Fatalf("patch: %d %s", r.code, r.body)
	}
	for _, ws := range alpha {
		if ev := ws.next(t); ev.Type != "ADDED" || ev.Object["apiVersion"] != "platform.example.com/v1alpha1" || fieldAt(ev.Object, "spec", "owner") != "ana" {
			t.Fatalf("alpha watcher: %v", ev)
		}
		if ev := ws.next(t); ev.Type != "MODIFIED" || fieldAt(ev.Object, "spec", "owner") != "bo" {
			t.Fatalf("alpha watcher: %v", ev)
		}
	}
	for _, ws := range beta {
		if ev := ws.next(t); ev.Type != "ADDED" || fieldAt(ev.Object, "spec", "team") != "ana" {
			t.Fatalf("beta watcher: %v", ev)
		}
		if ev := ws.next(t); ev.Type != "MODIFIED" || fieldAt(ev.Object, "spec", "team") != "bo" {
			t.Fatalf("beta watcher: %v", ev)
		}
	}
	// 2 events × 2 versions, whatever the number of watchers.
	if n := h.frameEncodes.Load() - start; n != 4 {
		t.Errorf("%d frames encoded for 2 events to 3+3 watchers at 2 versions; want 4", n)
	}
}

func TestVersionsStorageMigration(t *testing.T) {
	e, _ := newVersionedEnv(t)
	// An object stored when v1alpha1 was the storage version.
	old := `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"old","namespace":"ns","uid":"u-1","creationTimestamp":"2026-01-01T00:00:00Z","generation":1},"spec":{"owner":"ana"}}`
	if _, err := e.store.Create(context.Background(), storage.ObjectKey("platform.example.com", "environments", "ns", "old"), []byte(old)); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	for range 100 { // the cache sees it
		r := e.do(t, "GET", betaBase+"/namespaces/ns/environments/old", "")
		if r.code == 200 {
			got = r.object(t)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got["apiVersion"] != "platform.example.com/v1beta1" || fieldAt(got, "spec", "team") != "ana" {
		t.Fatalf("old object read at v1beta1: %v", got)
	}
	// A no-op update rewrites it at the storage version.
	b, _ := json.Marshal(got)
	if r := e.do(t, "PUT", betaBase+"/namespaces/ns/environments/old", string(b)); r.code != 200 {
		t.Fatalf("no-op put: %d %s", r.code, r.body)
	}
	if m := raw(t, e, "old"); m["apiVersion"] != "platform.example.com/v1beta1" || fieldAt(m, "spec", "team") != "ana" || fieldAt(m, "metadata", "uid") != "u-1" {
		t.Fatalf("after the no-op update, stored %v", m)
	}
}

func TestVersionsConversionFailure(t *testing.T) {
	e, _ := newVersionedEnv(t)
	r := e.do(t, "POST", envBase+"/namespaces/ns/environments",
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"a"},"spec":{"owner":"fail"}}`)
	st := r.status(t)
	if r.code != 500 || st.Reason != meta.StatusReasonInternalError || !strings.Contains(st.Message, "conversion for platform.example.com/v1alpha1, Kind=Environment failed: owner fail cannot be converted") {
		t.Fatalf("failed conversion: %d %s", r.code, r.body)
	}
	if r = e.do(t, "GET", betaBase+"/namespaces/ns/environments/a", ""); r.code != 404 {
		t.Fatalf("a failed conversion stored the object: %d %s", r.code, r.body)
	}
}

func TestVersionsDiscovery(t *testing.T) {
	e, _ := newVersionedEnv(t)
	var g meta.APIGroup
	if err := json.Unmarshal(e.do(t, "GET", "/apis/platform.example.com", "").body, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Versions) != 2 || g.PreferredVersion.Version != "v1beta1" || g.Versions[1].Version != "v1alpha1" {
		t.Fatalf("group: %+v", g)
	}
	want := meta.StorageVersionHash("platform.example.com", "v1beta1", "Environment")
	for _, v := range []string{"v1alpha1", "v1beta1"} {
		var rl meta.APIResourceList
		if err := json.Unmarshal(e.do(t, "GET", "/apis/platform.example.com/"+v, "").body, &rl); err != nil {
			t.Fatal(err)
		}
		if len(rl.APIResources) != 1 || rl.APIResources[0].StorageVersionHash != want {
			t.Errorf("%s: %+v; want storageVersionHash %s", v, rl.APIResources, want)
		}
	}
}

func TestVersionsConfigErrors(t *testing.T) {
	s := openStore(t)
	for name, tc := range map[string]struct {
		mutate func([]Resource)
		want   string
	}{
		"no storage version":   {func(rs []Resource) { rs[0].StorageVersion = false }, "exactly one must be the StorageVersion, none is"},
		"two storage versions": {func(rs []Resource) { rs[1].StorageVersion = true }, "exactly one must be the StorageVersion, not v1beta1 and v1alpha1"},
		"kinds differ":         {func(rs []Resource) { rs[1].Kind = "Env" }, "versions v1beta1 and v1alpha1 differ in Kind"},
		"stores differ":        {func(rs []Resource) { rs[1].Storage = openStore(t) }, "differ in Storage"},
		"two conversions":      {func(rs []Resource) { rs[1].Conversion = teamConversion() }, "Conversion is set on more than one version"},
		"missing funcs": {func(rs []Resource) { rs[0].Conversion = ConversionFuncs{Funcs: map[string]VersionConversion{}} },
			"version v1alpha1 needs ToHub and FromHub (the hub is v1beta1)"},
		"unknown hub": {func(rs []Resource) { rs[0].Conversion = ConversionFuncs{Hub: "v2"} }, "ConversionFuncs.Hub v2 is not one of the versions"},
	} {
		t.Run(name, func(t *testing.T) {
			rs := twoVersions(s)
			tc.mutate(rs)
			_, err := NewHandler(Config{Resources: rs})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want %q", err, tc.want)
			}
		})
	}
}

func TestCompareVersions(t *testing.T) {
	// kube's documented order.
	order := []string{"v10", "v2", "v1", "v11beta2", "v10beta3", "v3beta1", "v12alpha1", "v11alpha2", "foo1", "foo10"}
	for i := range order {
		for j := range order {
			got := CompareVersions(order[i], order[j])
			if (i < j && got <= 0) || (i > j && got >= 0) || (i == j && got != 0) {
				t.Errorf("CompareVersions(%s, %s) = %d", order[i], order[j], got)
			}
		}
	}
}

func TestStoredAt(t *testing.T) {
	for in, want := range map[string]string{
		`{"apiVersion":"g/v1","kind":"K"}`:                          "g/v1",
		`{"kind":"K","apiVersion":"g/v2"}`:                          "g/v2",
		` { "metadata":{"apiVersion":"x"}, "apiVersion" : "g\/v3"}`: "g/v3",
		`{"kind":"K"}`: "",
		`[1]`:          "",
	} {
		if got := storedAt([]byte(in)); got != want {
			t.Errorf("storedAt(%s) = %q, want %q", in, got, want)
		}
	}
}

// TestVersionsConversionsCached: an object at one revision is converted
// once per version, however many GETs, LISTs and selector-filtered watchers
// read it; a new revision converts again.
func TestVersionsConversionsCached(t *testing.T) {
	e, h := newVersionedEnv(t)
	var watchers []*watchStream
	for range 3 {
		watchers = append(watchers, e.watch(t, envBase+"/namespaces/ns/environments?watch=true&resourceVersion=1&fieldSelector=spec.owner%3Dana"))
	}
	time.Sleep(100 * time.Millisecond)
	before := h.conversions.Load()
	if r := e.do(t, "POST", betaBase+"/namespaces/ns/environments",
		`{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"a"},"spec":{"team":"ana"}}`); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	for _, ws := range watchers {
		if ev := ws.next(t); ev.Type != "ADDED" || fieldAt(ev.Object, "spec", "owner") != "ana" {
			t.Fatalf("watcher: %v", ev)
		}
	}
	for range 3 {
		if r := e.do(t, "GET", envBase+"/namespaces/ns/environments/a", ""); r.code != 200 || fieldAt(r.object(t), "spec", "owner") != "ana" {
			t.Fatalf("get: %d %s", r.code, r.body)
		}
		if r := e.do(t, "GET", envBase+"/namespaces/ns/environments", ""); r.code != 200 {
			t.Fatalf("list: %d %s", r.code, r.body)
		}
	}
	if n := h.conversions.Load() - before; n != 1 {
		t.Errorf("%d conversions for one revision read by 3 selector watchers, 3 GETs and 3 LISTs at v1alpha1; want 1", n)
	}
}
