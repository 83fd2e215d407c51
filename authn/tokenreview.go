// This file holds the TokenReview webhook: a bearer token is checked by
// posting a TokenReview to the kube-apiserver (authentication.k8s.io/v1).

package authn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/kubeclient"
)

// TokenReviewPath is where TokenReviews are posted.
const TokenReviewPath = "/apis/authentication.k8s.io/v1/tokenreviews"

// TokenReview is the authentication.k8s.io/v1 object, as much as the webhook
// sends and reads.
type TokenReview struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Spec       TokenReviewSpec   `json:"spec"`
	Status     TokenReviewStatus `json:"status,omitzero"`
}

// TokenReviewSpec is what is asked.
type TokenReviewSpec struct {
	Token     string   `json:"token,omitempty"`
	Audiences []string `json:"audiences,omitempty"`
}

// TokenReviewStatus is the answer.
type TokenReviewStatus struct {
	Authenticated bool            `json:"authenticated,omitempty"`
	User          TokenReviewUser `json:"user,omitzero"`
	Audiences     []string        `json:"audiences,omitempty"`
	Error         string          `json:"error,omitempty"`
}

// TokenReviewUser is the user a TokenReview answers with.
type TokenReviewUser struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// TokenReviewConfig configures NewTokenReview.
type TokenReviewConfig struct {
	// Client reaches the kube-apiserver (its retries and per-attempt
	// timeout apply). Required.
	Client *kubeclient.Client
	// Audiences, when set, are sent in the review; the answer's audiences
	// (or, when it has none, these) must intersect them, else the token is
	// not-ok. Empty means no audience check.
	Audiences []string
	// Timeout bounds one review including retries. Zero means 10s
	// (TokenRequestTimeout).
	Timeout time.Duration
	// Metrics records apiserver_delegated_authn_request_total; nil records
	// nothing.
	Metrics *Metrics
}

// TokenReviewer is the TokenReview webhook, uncached: wrap it in a
// TokenCache (NewDelegated does).
type TokenReviewer struct {
	client    *kubeclient.Client
	audiences []string
	timeout   time.Duration
	metrics   *Metrics
}

var _ TokenAuthenticator = (*TokenReviewer)(nil)

// NewTokenReview returns the TokenReview webhook authenticator.
func NewTokenReview(cfg TokenReviewConfig) (*TokenReviewer, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("%w: no client", ErrWebhook)
	}
	t := &TokenReviewer{client: cfg.Client, audiences: slices.Clone(cfg.Audiences), timeout: cfg.Timeout, metrics: cfg.Metrics}
	if t.timeout == 0 {
		t.timeout = 10 * time.Second
	}
	return t, nil
}

// AuthenticateToken posts a TokenReview. Authenticated is the user;
// unauthenticated with status.error is an error, without it not-ok (the
// bearer authenticator then reports ErrInvalidToken); a failed call is an
// error wrapping ErrWebhook, so the request is a 401: fail closed.
func (t *TokenReviewer) AuthenticateToken(ctx context.Context, token string) (*filters.User, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	req := TokenReview{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview", Spec: TokenReviewSpec{Token: token, Audiences: t.audiences}}
	var resp TokenReview
	start := time.Now()
	err := t.client.Post(ctx, TokenReviewPath, req, &resp)
	code := 201
	var se *kubeclient.StatusError
	switch {
	case errors.As(err, &se):
		code = se.Code
	case err != nil:
		code = 0
	}
	t.metrics.delegatedRequest(code, time.Since(start))
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrWebhook, err)
	}
	if len(t.audiences) > 0 {
		got := resp.Status.Audiences
		if len(got) == 0 {
			got = t.audiences
		}
		if !slices.ContainsFunc(got, func(a string) bool { return slices.Contains(t.audiences, a) }) {
			return nil, false, nil
		}
	}
	if !resp.Status.Authenticated {
		if resp.Status.Error != "" {
			return nil, false, fmt.Errorf("%w: %s", ErrInvalidToken, resp.Status.Error)
		}
		return nil, false, nil
	}
	u := resp.Status.User
	if u.Username == "" {
		return nil, false, fmt.Errorf("%w: authenticated review without a username", ErrWebhook)
	}
	return &filters.User{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: u.Extra}, true, nil
}
