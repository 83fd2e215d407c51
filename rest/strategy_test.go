package rest

import (
	"context"
	"net/http"
	"testing"

	"github.com/annexapi/annex/field"
)

// TestStatusStrategy: ValidateUpdate guards the main resource and not
// <plural>/status, which ValidateStatusUpdate guards; a ValidateUpdate hook
// that lets metadata-only edits through (MetadataOnly) keeps an object that
// a stricter rule now refuses labelable.
func TestStatusStrategy(t *testing.T) {
	t.Parallel()
	var sawStatusInUpdate bool
	e := newEnv(t, func(c *Config) {
		r := &c.Resources[0]
		r.StatusSubresource = true
		// The spec rule got stricter after objects were created: no
		// replicas at all, unless only metadata changes.
		r.Strategy.ValidateUpdate = func(_ context.Context, obj, old Object) field.ErrorList {
			if _, ok := obj["status"]; ok && !jsonEqualCounted(obj["status"], old["status"], func(int64) {}) {
				sawStatusInUpdate = true
			}
			if MetadataOnly(obj, old) {
				return nil
			}
			return field.ErrorList{field.Forbidden(field.NewPath("spec", "replicas"), "replicas are no longer allowed")}
		}
		r.Strategy.ValidateStatusUpdate = func(_ context.Context, obj, _ Object) field.ErrorList {
			st, _ := obj["status"].(map[string]any)
			if st["phase"] == "Bogus" {
				return field.ErrorList{field.NotSupported(field.NewPath("status", "phase"), "Bogus", []string{"Pending", "Ready"})}
			}
			return nil
		}
	})
	e.create(t, "ns", "a", nil, "alice")
	base := envBase + "/namespaces/ns/environments/a"
	merge := []string{"Content-Type", "application/merge-patch+json"}

	if r := e.do(t, "PATCH", base+"/status", `{"status":{"phase":"Ready"}}`, merge...); r.code != http.StatusOK {
		t.Fatalf("status patch: %d %s", r.code, r.body)
	}
	if sawStatusInUpdate {
		t.Error("ValidateUpdate ran on a /status write")
	}
	r := e.do(t, "PATCH", base+"/status", `{"status":{"phase":"Bogus"}}`, merge...)
	if r.code != http.StatusUnprocessableEntity || r.status(t).Message != `Environment.platform.example.com "a" is invalid: status.phase: Unsupported value: "Bogus": supported values: "Pending", "Ready"` {
		t.Errorf("bad status: %d %s", r.code, r.body)
	}
	if r := e.do(t, "PATCH", base, `{"metadata":{"labels":{"team":"payments"}}}`, merge...); r.code != http.StatusOK {
		t.Errorf("label on an object the spec rule now refuses: %d %s", r.code, r.body)
	}
	r = e.do(t, "PATCH", base, `{"spec":{"replicas":2}}`, merge...)
	if r.code != http.StatusUnprocessableEntity || r.status(t).Message != `Environment.platform.example.com "a" is invalid: spec.replicas: Forbidden: replicas are no longer allowed` {
		t.Errorf("spec change: %d %s", r.code, r.body)
	}
}

// TestStrategyCausesNotRepeated: a strategy cause identical to one already
// listed (the schema's, or its own) is listed once; a different one is kept.
func TestStrategyCausesNotRepeated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) {
		c.Resources[0].Strategy.ValidateCreate = func(context.Context, Object) field.ErrorList {
			p := field.NewPath("spec", "replicas")
			return field.ErrorList{field.Invalid(p, 1, "odd"), field.Invalid(p, 1, "odd"), field.Invalid(p, 1, "small")}
		}
	})
	r := e.do(t, "POST", envBase+"/namespaces/ns/environments", `{"metadata":{"name":"a"},"spec":{"replicas":1}}`, "Content-Type", "application/json")
	if st := r.status(t); r.code != http.StatusUnprocessableEntity || len(st.Details.Causes) != 2 ||
		st.Message != `Environment.platform.example.com "a" is invalid: [spec.replicas: Invalid value: 1: odd, spec.replicas: Invalid value: 1: small]` {
		t.Errorf("%d %s", r.code, r.body)
	}
}
