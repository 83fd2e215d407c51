package loadbench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/schema"
	"github.com/annexapi/annex/storage/bbolt"
)

const benchSchema = `
type: object
properties:
  spec:
    type: object
    required: [owner, tier]
    x-kubernetes-validations:
    - rule: "self.tier != 'prod' || self.replicas >= 2"
      message: prod environments need at least 2 replicas
    properties:
      owner: {type: string, minLength: 1}
      tier: {type: string, enum: [dev, staging, prod]}
      replicas: {type: integer, minimum: 0, default: 1}
`

const benchPolicies = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: owner-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [bench.annex.dev], apiVersions: ["*"], operations: [CREATE, UPDATE], resources: [environments]}
  validations:
  - expression: "object.spec.tier != 'prod' || (has(object.metadata.labels) && 'owner' in object.metadata.labels)"
    message: prod needs an owner label
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: owner-label}
spec: {policyName: owner-label, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: name-length}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [bench.annex.dev], apiVersions: ["*"], operations: [CREATE, UPDATE], resources: [environments]}
  validations:
  - expression: "size(object.metadata.name) <= 40"
    message: name too long
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: name-length}
spec: {policyName: name-length, validationActions: [Deny]}
`

// benchHandler builds a server's handler with every request authenticated as
// a system:masters user, on a bbolt store without fsync (so the figures show
// the request path, not the disk).
func benchHandler(b *testing.B, withAdmission bool) http.Handler {
	b.Helper()
	store, err := bbolt.Open(filepath.Join(b.TempDir(), "db"), bbolt.Options{UnsafeNoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	res := rest.Resource{Group: "bench.annex.dev", Version: "v1", Plural: "environments", Kind: "Environment", Namespaced: true}
	o := benchOpts{store: store, disableWatchCache: true,
		authenticator: authn.AuthenticatorFunc(func(*http.Request) (*filters.User, bool, error) {
			return &filters.User{Name: "bench", Groups: []string{"system:masters", "system:authenticated"}}, true, nil
		})}
	if withAdmission {
		res.Schema = schema.MustParseYAML(benchSchema)
		vp, err := admission.LoadValidatingPolicies([]byte(benchPolicies), admission.PolicyOptions{})
		if err != nil {
			b.Fatal(err)
		}
		o.validators = []admission.Validator{vp}
	}
	o.resources = []rest.Resource{res}
	return buildServer(b, o).Handler() // never run: no watch cache to fill
}

// BenchmarkCreate measures create throughput through the whole handler chain,
// without and with schema validation plus two ValidatingAdmissionPolicies, in
// one run:
//
//	cd e2e && go test -run '^$' -bench Create -benchtime 3000x ./loadbench
func BenchmarkCreate(b *testing.B) {
	for _, tc := range []struct {
		name      string
		admission bool
	}{{"no_admission", false}, {"schema_and_two_cel_policies", true}} {
		b.Run(tc.name, func(b *testing.B) {
			h := benchHandler(b, tc.admission)
			var n atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					body := fmt.Sprintf(`{"apiVersion":"bench.annex.dev/v1","kind":"Environment","metadata":{"name":"env-%d","labels":{"owner":"x"}},"spec":{"owner":"team","tier":"prod","replicas":3}}`, n.Add(1))
					req := httptest.NewRequest(http.MethodPost, "/apis/bench.annex.dev/v1/namespaces/default/environments", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusCreated {
						b.Fatalf("create: %d %s", rec.Code, rec.Body)
					}
				}
			})
		})
	}
}
