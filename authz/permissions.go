// This file holds PermissionCheck: a readiness check that asks the cluster,
// with SelfSubjectAccessReviews, whether this server's own credentials may do
// what delegated mode needs (create TokenReviews and SubjectAccessReviews,
// read the extension-apiserver-authentication ConfigMap). Without it, a
// missing RBAC binding shows up only as every proxied request failing.

package authz

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/annexapi/annex/kubeclient"
)

// SelfSubjectAccessReviewPath is where SelfSubjectAccessReviews are created.
const SelfSubjectAccessReviewPath = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"

// ErrPermissionMissing is returned by PermissionCheck.Ready when the cluster
// says this server may not do something it needs.
var ErrPermissionMissing = errors.New("authz: permission missing")

// Permission is one thing the server needs to be allowed, and how to grant
// it, for the message when it is not.
type Permission struct {
	Attributes ResourceAttributes
	// Fix says how an operator grants it, e.g. "bind the ClusterRole
	// system:auth-delegator to this server's service account".
	Fix string
}

func (p Permission) String() string {
	a := p.Attributes
	s := a.Verb + " " + a.Resource
	if a.Group != "" {
		s += "." + a.Group
	}
	if a.Name != "" {
		s += " " + a.Name
	}
	if a.Namespace != "" {
		s += " in namespace " + a.Namespace
	}
	return s
}

// DelegationPermissions are what a server behind kube-aggregator needs:
// TokenReviews and SubjectAccessReviews (the ClusterRole
// system:auth-delegator) and reading kube-system/extension-apiserver-authentication
// (the Role extension-apiserver-authentication-reader).
func DelegationPermissions() []Permission {
	const delegator = "bind the ClusterRole system:auth-delegator to this server's service account (a ClusterRoleBinding)"
	return []Permission{
		{Attributes: ResourceAttributes{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"}, Fix: delegator},
		{Attributes: ResourceAttributes{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, Fix: delegator},
		{Attributes: ResourceAttributes{Verb: "get", Resource: "configmaps", Namespace: "kube-system", Name: "extension-apiserver-authentication"},
			Fix: "bind the Role kube-system/extension-apiserver-authentication-reader to this server's service account (a RoleBinding in kube-system)"},
	}
}

// PermissionCheckConfig configures NewPermissionCheck. Zero values are
// defaults.
type PermissionCheckConfig struct {
	// Client reaches the kube-apiserver with the server's own credentials.
	// Required.
	Client *kubeclient.Client
	// Permissions are checked in order. Nil means DelegationPermissions().
	Permissions []Permission
	// Interval is how long an answer is reused before Ready asks again.
	// Zero means 1 minute.
	Interval time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// PermissionCheck is a readiness check (Ready(ctx) error) that the server's
// credentials hold its Permissions. Safe for concurrent use; concurrent
// Ready calls share one round of reviews.
type PermissionCheck struct {
	cfg PermissionCheckConfig

	// mu guards checked and last, and serialises refreshes.
	mu      sync.Mutex
	checked time.Time
	last    error
}

// NewPermissionCheck returns the check of cfg.
func NewPermissionCheck(cfg PermissionCheckConfig) (*PermissionCheck, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("%w: PermissionCheck needs a client", ErrWebhook)
	}
	if cfg.Permissions == nil {
		cfg.Permissions = DelegationPermissions()
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &PermissionCheck{cfg: cfg}, nil
}

// Ready returns nil when every permission is allowed. Otherwise it returns
// an error wrapping ErrPermissionMissing that names each missing permission
// and its fix, or the error of asking (a review that could not be made is
// not cached).
func (p *PermissionCheck) Ready(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.checked.IsZero() && p.cfg.Now().Sub(p.checked) < p.cfg.Interval {
		return p.last
	}
	var missing []string
	for _, perm := range p.cfg.Permissions {
		allowed, reason, err := p.review(ctx, perm.Attributes)
		if err != nil {
			return fmt.Errorf("asking whether this server may %s: %w", perm, err)
		}
		if !allowed {
			m := "this server may not " + perm.String() + ": " + perm.Fix
			if reason != "" {
				m += " (" + reason + ")"
			}
			missing = append(missing, m)
		}
	}
	p.last = nil
	if len(missing) > 0 {
		p.last = fmt.Errorf("%w: %s", ErrPermissionMissing, strings.Join(missing, "; "))
	}
	p.checked = p.cfg.Now()
	return p.last
}

// review creates one SelfSubjectAccessReview.
func (p *PermissionCheck) review(ctx context.Context, ra ResourceAttributes) (bool, string, error) {
	type spec struct {
		ResourceAttributes *ResourceAttributes `json:"resourceAttributes"`
	}
	in := struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       spec   `json:"spec"`
	}{"authorization.k8s.io/v1", "SelfSubjectAccessReview", spec{&ra}}
	var out struct {
		Status SubjectAccessReviewStatus `json:"status"`
	}
	if err := p.cfg.Client.Post(ctx, SelfSubjectAccessReviewPath, in, &out); err != nil {
		return false, "", err
	}
	return out.Status.Allowed && !out.Status.Denied, out.Status.Reason, nil
}
