// This file holds the roles kube-apiserver grants every user out of the box
// (its RBAC bootstrap policy), for servers that authorize on their own.

package authz

// NameBootstrapRBAC is the union name of the bootstrap roles' authorizer
// (BootstrapRBAC).
const NameBootstrapRBAC = "rbac-bootstrap"

// bootstrapPolicy is the part of kube-apiserver's RBAC bootstrap policy that
// concerns any user: system:discovery (discovery, OpenAPI, version and
// health) and system:basic-user (asking about oneself: kubectl auth can-i and
// whoami) for every authenticated user, system:public-info-viewer (version and
// health) for everyone, with kube's role and binding names, so that an
// allowed request's reason reads as kube's.
const bootstrapPolicy = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:discovery"}
rules:
- verbs: [get]
  nonResourceURLs: [/livez, /readyz, /healthz, /version, /version/, /openapi, /openapi/*, /api, /api/*, /apis, /apis/*]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:basic-user"}
rules:
- verbs: [create]
  apiGroups: [authorization.k8s.io]
  resources: [selfsubjectaccessreviews, selfsubjectrulesreviews]
- verbs: [create]
  apiGroups: [authentication.k8s.io]
  resources: [selfsubjectreviews]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:public-info-viewer"}
rules:
- verbs: [get]
  nonResourceURLs: [/livez, /readyz, /healthz, /version, /version/]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:discovery"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:discovery"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:authenticated"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:basic-user"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:basic-user"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:authenticated"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:public-info-viewer"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:public-info-viewer"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:authenticated"}
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:unauthenticated"}
`

// BootstrapRBAC returns the roles kube-apiserver's RBAC bootstrap policy
// gives every user (system:discovery and system:basic-user to
// system:authenticated, system:public-info-viewer to everyone), as an RBAC
// authorizer. A server that authorizes on its own (standalone) puts it after
// its own policy; behind kube-aggregator the cluster's RBAC has them.
func BootstrapRBAC() (*RBAC, error) { return ParseRBAC([]byte(bootstrapPolicy)) }
