package admission

import (
	"context"
	"reflect"
	"testing"
)

// TestPlainJSON_matches_CEL_conversion: the results mutations produce
// convert without protobuf values exactly as through them, and what
// plainJSON leaves (bytes, timestamps, large ints, non-string keys) goes
// the protobuf way.
func TestPlainJSON_matches_CEL_conversion(t *testing.T) {
	t.Parallel()
	env, err := policyEnv(true)
	if err != nil {
		t.Fatal(err)
	}
	obj := decode(t, `{"metadata":{"name":"w","labels":{"a":"b"}},"spec":{"replicas":3,"ratio":0.5,"ports":[{"port":80}],"big":1e3}}`)
	act := map[string]any{"object": obj, "oldObject": nil, "request": requestObject(&Attributes{Operation: Create}, ""),
		"params": nil, "namespaceObject": nil, "variables": map[string]any{}}
	for _, tt := range []struct {
		expr  string
		plain bool // plainJSON converts it
	}{
		{`Object{metadata: Object.metadata{labels: {"managed-by": "annex"}}}`, true},
		{`Object{spec: Object.spec{replicas: object.spec.replicas + 1, ratio: object.spec.ratio * 2.0, ports: object.spec.ports}}`, true},
		// Mixed literals need dyn elements: Kubernetes refuses [1, 2.5].
		{`[JSONPatch{op: "add", path: "/spec/x", value: [dyn(1), dyn(2.5), dyn(-3.0), dyn("s"), dyn(true), dyn(null), dyn({"k": [{}]})]}]`, true},
		{`{"a": dyn(9007199254740991), "b": dyn(-9007199254740991), "c": dyn(1e300), "d": dyn(0.1), "e": object.spec}`, true},
		{`{"big": 9007199254740992}`, false},
		{`{"u": 3u}`, false},
		{`{"bytes": b"abc"}`, false},
		{`{"ts": dyn(timestamp("2026-11-26T05:00:00Z")), "d": dyn(duration("1.5s"))}`, false},
		{`{1: "int key"}`, false},
		{`[[dyn(1), dyn([dyn(2), dyn([3u])])]]`, false},
		{`object`, true},
		{`object.spec.ports`, true},
	} {
		c, err := compileExpr(env, tt.expr, nil, PerCallLimit)
		if err != nil {
			t.Fatalf("%s: %v", tt.expr, err)
		}
		v, err := c.eval(context.Background(), act, nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.expr, err)
		}
		want, wantErr := structJSON(v)
		got, ok := plainJSON(v)
		if ok != tt.plain {
			t.Fatalf("%s: plainJSON converted it: %v, want %v", tt.expr, ok, tt.plain)
		}
		if ok && (wantErr != nil || !reflect.DeepEqual(got, want)) {
			t.Fatalf("%s:\n got %#v\nwant %#v (%v)", tt.expr, got, want, wantErr)
		}
		if n, err := nativeValue(v); (err != nil) != (wantErr != nil) || (err == nil && !reflect.DeepEqual(n, want)) {
			t.Fatalf("%s: nativeValue %#v, %v; want %#v, %v", tt.expr, n, err, want, wantErr)
		}
	}
}
