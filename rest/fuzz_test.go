package rest

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzPatch sends arbitrary JSON patches and merge patches (dry run, so the
// stored object stays as created) to a real handler over bbolt: no patch is
// a 5xx, every refusal is a Status, and a patch that applies keeps the
// object's identity (a patch cannot rename or move it).
func FuzzPatch(f *testing.F) {
	for _, s := range []struct {
		merge bool
		body  string
	}{
		{false, `[{"op":"replace","path":"/spec/owner","value":"bob"}]`},
		{false, `[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`},
		{false, `[{"op":"test","path":"/spec/tier","value":"dev"},{"op":"remove","path":"/spec/replicas"}]`},
		{false, `[{"op":"copy","from":"/spec","path":"/spec/x"},{"op":"move","from":"/spec/x","path":"/status"}]`},
		{false, `[{"op":"replace","path":"/metadata/name","value":"b"}]`},
		{false, `[{"op":"replace","path":"","value":[]}]`},
		{false, `[{"op":"add","path":"/spec/-1","value":1}]`},
		{false, `null`},
		{true, `{"spec":{"owner":"carol","replicas":3}}`},
		{true, `{"metadata":{"labels":{"a":null},"resourceVersion":"1"}}`},
		{true, `{"metadata":{"namespace":"other"}}`},
		{true, `{"spec":null,"kind":"Other"}`},
		{true, `[]`},
		{true, `{"spec":{"replicas":1e400}}`},
	} {
		f.Add(s.merge, []byte(s.body))
	}
	e := newEnv(f, nil)
	e.create(f, "ns1", "a", map[string]string{"team": "x"}, "alice")
	h := e.srv.Config.Handler
	f.Fuzz(func(t *testing.T, merge bool, body []byte) {
		ct := "application/json-patch+json"
		if merge {
			ct = "application/merge-patch+json"
		}
		req := httptest.NewRequest("PATCH", envBase+"/namespaces/ns1/environments/a?dryRun=All", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: %d %s", ct, body, rec.Code, rec.Body)
		}
		var m map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatalf("%s %q: %d, body not JSON: %s", ct, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			if m["kind"] != "Status" || m["code"] != float64(rec.Code) {
				t.Fatalf("%s %q: %d, not a Status: %s", ct, body, rec.Code, rec.Body)
			}
			return
		}
		if rec.Code != 200 || m["kind"] != "Environment" || m["apiVersion"] != "platform.example.com/v1alpha1" ||
			fieldAt(m, "metadata", "name") != "a" || fieldAt(m, "metadata", "namespace") != "ns1" {
			t.Fatalf("%s %q: %d with another object: %s", ct, body, rec.Code, rec.Body)
		}
	})
}
