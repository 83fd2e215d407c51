// This file holds the SubjectAccessReview webhook: decisions delegated to
// the kube-apiserver (authorization.k8s.io/v1), cached as Kubernetes caches
// them.

package authz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/annexapi/annex/kubeclient"
)

// SubjectAccessReviewPath is where SubjectAccessReviews are posted.
const SubjectAccessReviewPath = "/apis/authorization.k8s.io/v1/subjectaccessreviews"

// NameWebhook is the union name of the SubjectAccessReview authorizer.
const NameWebhook = "kubernetes.io/webhook"

// Defaults of delegated authorization.
const (
	// DefaultWebhookAllowTTL and DefaultWebhookDenyTTL are
	// --authorization-webhook-cache-authorized-ttl and -unauthorized-ttl.
	DefaultWebhookAllowTTL = 10 * time.Second
	DefaultWebhookDenyTTL  = 10 * time.Second
	// DefaultWebhookCacheSize bounds the cached reviews.
	DefaultWebhookCacheSize = 8192
	// maxCachedAttributes: a review whose attribute strings sum to this many
	// bytes or more is never cached (Kubernetes' limit).
	maxCachedAttributes = 10000
)

// SubjectAccessReview is the authorization.k8s.io/v1 object, as much as the
// webhook sends and reads.
type SubjectAccessReview struct {
	APIVersion string                    `json:"apiVersion"`
	Kind       string                    `json:"kind"`
	Spec       SubjectAccessReviewSpec   `json:"spec"`
	Status     SubjectAccessReviewStatus `json:"status,omitzero"`
}

// SubjectAccessReviewSpec is who asks for what.
type SubjectAccessReviewSpec struct {
	ResourceAttributes    *ResourceAttributes    `json:"resourceAttributes,omitempty"`
	NonResourceAttributes *NonResourceAttributes `json:"nonResourceAttributes,omitempty"`
	User                  string                 `json:"user,omitempty"`
	Groups                []string               `json:"groups,omitempty"`
	Extra                 map[string][]string    `json:"extra,omitempty"`
	UID                   string                 `json:"uid,omitempty"`
}

// ResourceAttributes describe a resource request.
type ResourceAttributes struct {
	Namespace     string                   `json:"namespace,omitempty"`
	Verb          string                   `json:"verb,omitempty"`
	Group         string                   `json:"group,omitempty"`
	Version       string                   `json:"version,omitempty"`
	Resource      string                   `json:"resource,omitempty"`
	Subresource   string                   `json:"subresource,omitempty"`
	Name          string                   `json:"name,omitempty"`
	FieldSelector *FieldSelectorAttributes `json:"fieldSelector,omitempty"`
	LabelSelector *LabelSelectorAttributes `json:"labelSelector,omitempty"`
}

// FieldSelectorAttributes carry a list/watch's field selector. annex sends
// the raw selector, which the kube-apiserver parses when no requirements
// are given.
type FieldSelectorAttributes struct {
	RawSelector string `json:"rawSelector,omitempty"`
}

// LabelSelectorAttributes carry a list/watch's label selector, raw.
type LabelSelectorAttributes struct {
	RawSelector string `json:"rawSelector,omitempty"`
}

// NonResourceAttributes describe a request for a path outside the API.
type NonResourceAttributes struct {
	Path string `json:"path,omitempty"`
	Verb string `json:"verb,omitempty"`
}

// SubjectAccessReviewStatus is the answer.
type SubjectAccessReviewStatus struct {
	Allowed         bool   `json:"allowed"`
	Denied          bool   `json:"denied,omitempty"`
	Reason          string `json:"reason,omitempty"`
	EvaluationError string `json:"evaluationError,omitempty"`
}

// WebhookConfig configures NewWebhook.
type WebhookConfig struct {
	// Client reaches the kube-apiserver (in-cluster or
	// --authorization-kubeconfig). Required.
	Client *kubeclient.Client
	// Name labels metrics. Zero means NameWebhook.
	Name string
	// AllowTTL is how long an Allow is cached. Zero means
	// DefaultWebhookAllowTTL; negative means not cached.
	AllowTTL time.Duration
	// DenyTTL is how long a Deny or NoOpinion is cached. Zero means
	// DefaultWebhookDenyTTL; negative means not cached. Errors are never
	// cached.
	DenyTTL time.Duration
	// CacheSize bounds the cache (LRU). Zero means DefaultWebhookCacheSize.
	CacheSize int
	// Timeout bounds one review including retries. Zero means 10s.
	Timeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Metrics records calls and cache hits; nil records nothing.
	Metrics *Metrics
}

// Webhook asks the kube-apiserver with SubjectAccessReviews.
type Webhook struct {
	client   *kubeclient.Client
	name     string
	allowTTL time.Duration
	denyTTL  time.Duration
	timeout  time.Duration
	now      func() time.Time
	metrics  *Metrics
	cache    *lru[webhookAnswer]
}

type webhookAnswer struct {
	d      Decision
	reason string
}

var _ Authorizer = (*Webhook)(nil)

// NewWebhook returns the SubjectAccessReview authorizer.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("%w: no client", ErrWebhook)
	}
	w := &Webhook{client: cfg.Client, name: cfg.Name, allowTTL: cfg.AllowTTL, denyTTL: cfg.DenyTTL, timeout: cfg.Timeout,
		now: cfg.Now, metrics: cfg.Metrics}
	if w.name == "" {
		w.name = NameWebhook
	}
	if w.allowTTL == 0 {
		w.allowTTL = DefaultWebhookAllowTTL
	}
	if w.denyTTL == 0 {
		w.denyTTL = DefaultWebhookDenyTTL
	}
	if w.timeout == 0 {
		w.timeout = 10 * time.Second
	}
	if w.now == nil {
		w.now = time.Now
	}
	size := cfg.CacheSize
	if size <= 0 {
		size = DefaultWebhookCacheSize
	}
	w.cache = newLRU[webhookAnswer](size)
	return w, nil
}

// ReviewSpec returns the SubjectAccessReview spec for a: the user, UID,
// groups and extra, and the resource (with raw selectors) or non-resource
// attributes.
func ReviewSpec(a Attributes) SubjectAccessReviewSpec {
	var s SubjectAccessReviewSpec
	if a.User != nil {
		s.User, s.UID, s.Groups, s.Extra = a.User.Name, a.User.UID, a.User.Groups, a.User.Extra
	}
	if !a.IsResourceRequest {
		s.NonResourceAttributes = &NonResourceAttributes{Path: a.Path, Verb: a.Verb}
		return s
	}
	ra := &ResourceAttributes{Namespace: a.Namespace, Verb: a.Verb, Group: a.APIGroup, Version: a.APIVersion,
		Resource: a.Resource, Subresource: a.Subresource, Name: a.Name}
	if a.FieldSelector != "" {
		ra.FieldSelector = &FieldSelectorAttributes{RawSelector: a.FieldSelector}
	}
	if a.LabelSelector != "" {
		ra.LabelSelector = &LabelSelectorAttributes{RawSelector: a.LabelSelector}
	}
	s.ResourceAttributes = ra
	return s
}

// Authorize answers from the cache or posts a SubjectAccessReview. allowed
// is Allow; denied is Deny; both is Deny with an error; neither is
// NoOpinion; the reason is status.reason. A failed call is NoOpinion with an
// error wrapping ErrWebhook, which the filter answers 500: fail closed.
func (w *Webhook) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	spec := ReviewSpec(a)
	keyBytes, err := json.Marshal(spec)
	if err != nil {
		return DecisionNoOpinion, "", fmt.Errorf("%w: %v", ErrWebhook, err)
	}
	key := string(keyBytes)
	cacheable := attributesLen(a) < maxCachedAttributes
	if cacheable {
		if ans, ok := w.cache.get(key, w.now()); ok {
			w.metrics.cacheLookup(true)
			return ans.d, ans.reason, nil
		}
		w.metrics.cacheLookup(false)
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req := SubjectAccessReview{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview", Spec: spec}
	var resp SubjectAccessReview
	start := time.Now()
	err = w.client.Post(ctx, SubjectAccessReviewPath, req, &resp)
	code, result := 201, "success"
	var se *kubeclient.StatusError
	switch {
	case errors.As(err, &se):
		code, result = se.Code, "error"
	case errors.Is(err, context.Canceled):
		code, result = 0, "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		code, result = 0, "timeout"
	case err != nil:
		code, result = 0, "error"
	}
	w.metrics.webhookCall(w.name, code, result, time.Since(start))
	if err != nil {
		return DecisionNoOpinion, "", fmt.Errorf("%w: %v", ErrWebhook, err)
	}
	st := resp.Status
	var ans webhookAnswer
	switch {
	case st.Allowed && st.Denied:
		return DecisionDeny, st.Reason, fmt.Errorf("%w: SubjectAccessReview answered both allowed and denied", ErrWebhook)
	case st.Allowed:
		ans = webhookAnswer{DecisionAllow, st.Reason}
	case st.Denied:
		ans = webhookAnswer{DecisionDeny, st.Reason}
	default:
		ans = webhookAnswer{DecisionNoOpinion, st.Reason}
	}
	ttl := w.denyTTL
	if ans.d == DecisionAllow {
		ttl = w.allowTTL
	}
	if cacheable && ttl > 0 {
		w.cache.add(key, ans, w.now().Add(ttl))
	}
	return ans.d, ans.reason, nil
}

// CacheLen returns the number of cached reviews, expired ones included.
func (w *Webhook) CacheLen() int { return w.cache.len() }

// attributesLen sums the attribute strings, as Kubernetes does to keep huge
// reviews out of the cache.
func attributesLen(a Attributes) int {
	n := len(a.Verb) + len(a.Path) + len(a.APIGroup) + len(a.APIVersion) + len(a.Namespace) + len(a.Resource) +
		len(a.Subresource) + len(a.Name) + len(a.FieldSelector) + len(a.LabelSelector)
	if a.User != nil {
		n += len(a.User.Name) + len(a.User.UID)
		for _, g := range a.User.Groups {
			n += len(g)
		}
		for k, vs := range a.User.Extra {
			n += len(k)
			for _, v := range vs {
				n += len(v)
			}
		}
	}
	return n
}
