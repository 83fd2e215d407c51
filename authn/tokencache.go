// This file holds the token cache that sits in front of a slow token
// authenticator (TokenReview, OIDC), with Kubernetes' semantics: keyed by an
// HMAC of the token, separate TTLs for accepted and rejected tokens, errors
// never cached, concurrent misses sharing one lookup.

package authn

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/annexapi/annex/filters"
)

// DefaultTokenCacheTTL is the TTL of accepted and rejected tokens in
// delegated authentication (--authentication-token-webhook-cache-ttl).
const DefaultTokenCacheTTL = 10 * time.Second

// DefaultTokenCacheSize bounds the entries of a token cache.
const DefaultTokenCacheSize = 8192

// lookupTimeout bounds a shared lookup, which runs detached from any one
// caller's context (Kubernetes uses 30s).
const lookupTimeout = 30 * time.Second

// TokenCacheConfig configures NewTokenCache.
type TokenCacheConfig struct {
	// SuccessTTL is how long an accepted token is remembered. Zero means
	// DefaultTokenCacheTTL; negative means not cached.
	SuccessTTL time.Duration
	// FailureTTL is how long a rejected (not-ok) token is remembered. Zero
	// means DefaultTokenCacheTTL; negative means not cached. Errors are never
	// cached.
	FailureTTL time.Duration
	// Size bounds the number of entries. Zero means DefaultTokenCacheSize.
	Size int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Metrics records hits and misses; nil records nothing.
	Metrics *Metrics
}

// TokenCache is a TokenAuthenticator that remembers another's answers.
type TokenCache struct {
	auth       TokenAuthenticator
	successTTL time.Duration
	failureTTL time.Duration
	size       int
	now        func() time.Time
	metrics    *Metrics
	hmacKey    []byte
	group      singleflight.Group

	// mu guards entries.
	mu      sync.Mutex
	entries map[string]tokenEntry
}

type tokenEntry struct {
	user    *filters.User
	ok      bool
	expires time.Time
}

type tokenResult struct {
	user *filters.User
	ok   bool
}

var _ TokenAuthenticator = (*TokenCache)(nil)

// NewTokenCache returns a cache in front of auth.
func NewTokenCache(auth TokenAuthenticator, cfg TokenCacheConfig) *TokenCache {
	c := &TokenCache{auth: auth, successTTL: cfg.SuccessTTL, failureTTL: cfg.FailureTTL, size: cfg.Size,
		now: cfg.Now, metrics: cfg.Metrics, entries: map[string]tokenEntry{}, hmacKey: make([]byte, 32)}
	if c.successTTL == 0 {
		c.successTTL = DefaultTokenCacheTTL
	}
	if c.failureTTL == 0 {
		c.failureTTL = DefaultTokenCacheTTL
	}
	if c.size <= 0 {
		c.size = DefaultTokenCacheSize
	}
	if c.now == nil {
		c.now = time.Now
	}
	_, _ = rand.Read(c.hmacKey) // never fails (crypto/rand panics instead)
	return c
}

// key is the HMAC of the token: the cache never holds a token in the clear.
func (c *TokenCache) key(token string) string {
	h := hmac.New(sha256.New, c.hmacKey)
	fmt.Fprintf(h, "%d:", len(token))
	h.Write([]byte(token))
	return string(h.Sum(nil))
}

// AuthenticateToken answers from the cache or asks the wrapped
// authenticator, sharing one lookup among concurrent callers of one token.
// The shared lookup runs detached from the callers' contexts (30s limit);
// each caller waits at most until its own context is done.
func (c *TokenCache) AuthenticateToken(ctx context.Context, token string) (*filters.User, bool, error) {
	key := c.key(token)
	now := c.now()
	c.mu.Lock()
	e, hit := c.entries[key]
	if hit && !now.Before(e.expires) {
		delete(c.entries, key)
		hit = false
	}
	c.mu.Unlock()
	c.metrics.cacheLookup(hit)
	if hit {
		return copyUser(e.user), e.ok, nil
	}
	ch := c.group.DoChan(key, func() (any, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		u, ok, err := c.auth.AuthenticateToken(lctx, token)
		if err != nil {
			return nil, err // never cached
		}
		ttl := c.successTTL
		if !ok {
			ttl = c.failureTTL
		}
		if ttl > 0 {
			c.store(key, tokenEntry{user: u, ok: ok, expires: c.now().Add(ttl)})
		}
		return tokenResult{user: u, ok: ok}, nil
	})
	select {
	case <-ctx.Done():
		return nil, false, ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return nil, false, res.Err
		}
		r := res.Val.(tokenResult)
		return copyUser(r.user), r.ok, nil
	}
}

func (c *TokenCache) store(key string, e tokenEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.size {
		now := c.now()
		for k, old := range c.entries {
			if !now.Before(old.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries { // still full: drop arbitrary entries
			if len(c.entries) < c.size {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = e
}

// Len returns the number of cached entries, expired ones included.
func (c *TokenCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

func copyUser(u *filters.User) *filters.User {
	if u == nil {
		return nil
	}
	out := &filters.User{Name: u.Name, UID: u.UID, Groups: append([]string(nil), u.Groups...)}
	if u.Extra != nil {
		out.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			out.Extra[k] = append([]string(nil), v...)
		}
	}
	return out
}
