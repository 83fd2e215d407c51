package authz_test

import (
	"context"
	"fmt"
	"log"

	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/filters"
)

// ExampleParseRBAC evaluates a ClusterRole bound to a group, as a standalone
// server does with --authorization-policy-file.
func ExampleParseRBAC() {
	r, err := authz.ParseRBAC([]byte(`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: env-viewer}
rules: [{apiGroups: [platform.example.com], resources: [environments], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: viewers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: env-viewer}
subjects: [{kind: Group, apiGroup: rbac.authorization.k8s.io, name: viewers}]
`))
	if err != nil {
		log.Fatal(err)
	}
	alice := &filters.User{Name: "alice", Groups: []string{"viewers", "system:authenticated"}}
	for _, verb := range []string{"list", "delete"} {
		d, reason, _ := r.Authorize(context.Background(), authz.Attributes{User: alice, Verb: verb, IsResourceRequest: true,
			APIGroup: "platform.example.com", Namespace: "prod", Resource: "environments"})
		fmt.Println(verb, d, reason)
	}
	// Output:
	// list Allow RBAC: allowed by ClusterRoleBinding "viewers" of ClusterRole "env-viewer" to Group "viewers"
	// delete NoOpinion
}
