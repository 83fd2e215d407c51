package annex_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/rest"
)

// approversPolicy: testers may create widgets; only x may update
// widgets/approve.
const approversPolicy = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: widget-creator}
rules:
- {apiGroups: [test.annex.dev], resources: [widgets], verbs: [create, get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: testers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-creator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: testers}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: widget-approver}
rules:
- {apiGroups: [test.annex.dev], resources: [widgets/approve], verbs: [update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: x-approves}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-approver}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: x}
`

// approversOnly admits a widget only from who may approve widgets, asking
// the server's authorizer through the authorizer variable.
const approversOnly = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: approvers-only}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [test.annex.dev], apiVersions: ["*"], operations: [CREATE], resources: [widgets]}
  validations:
  - expression: "authorizer.requestResource.subresource('approve').check('update').allowed()"
    message: only approvers may create widgets
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: approvers-only}
spec:
  policyName: approvers-only
  validationActions: [Deny]
`

// TestAdmissionPolicyChecksWithServerAuthorizer: a ValidatingAdmissionPolicy's
// authorizer checks are answered by the server's own authorizer (RBAC from
// --authorization-policy-file here), for the requesting user.
func TestAdmissionPolicyChecksWithServerAuthorizer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens := writeFile(t, dir, "tokens.csv", "x-token,x,x-1,\"testers\"\ny-token,y,y-1,\"testers\"\n")
	b := annex.Builder{Resources: []rest.Resource{widgets()}, DataDir: filepath.Join(dir, "data"),
		Authentication: annex.Authentication{TokenAuthFile: tokens},
		Authorization:  annex.Authorization{PolicyFiles: []string{writeFile(t, dir, "rbac.yaml", approversPolicy)}},
		Admission:      annex.Admission{PolicyFiles: []string{writeFile(t, dir, "policy.yaml", approversOnly)}}}
	srv := startServer(t, b)
	create := func(token, name string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/apis/test.annex.dev/v1/namespaces/default/widgets",
			strings.NewReader(`{"metadata":{"name":"`+name+`"}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.AnonymousClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if code, body := create("x-token", "by-x"); code != http.StatusCreated {
		t.Fatalf("x (an approver) creates: %d %s", code, body)
	}
	code, body := create("y-token", "by-y")
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "ValidatingAdmissionPolicy 'approvers-only' with binding 'approvers-only' denied request: only approvers may create widgets") {
		t.Fatalf("y (not an approver) creates: %d %s", code, body)
	}
}
