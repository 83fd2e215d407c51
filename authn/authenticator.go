// This file holds the Authenticator contract, its Func adapter, the
// well-known users and groups, and the compositions: Union, FailOnError and
// WithAuthenticatedGroup.

package authn

import (
	"errors"
	"net/http"
	"slices"

	"github.com/annexapi/annex/filters"
)

// The users, groups and extra keys Kubernetes gives meaning to.
const (
	// AnonymousUser is the user of a request that presented no credentials.
	AnonymousUser = "system:anonymous"
	// UnauthenticatedGroup is the group of AnonymousUser.
	UnauthenticatedGroup = "system:unauthenticated"
	// AuthenticatedGroup is added to every authenticated user.
	AuthenticatedGroup = "system:authenticated"
	// PrivilegedGroup is the group Kubernetes authorizes for everything.
	PrivilegedGroup = "system:masters"
	// CredentialIDKey is the extra key naming the credential a user
	// authenticated with, e.g. "X509SHA256=<hex>".
	CredentialIDKey = "authentication.kubernetes.io/credential-id"
)

// Authenticator finds out who sent a request.
//
// Authenticate returns the user and true when the request carries a
// credential this authenticator accepts; nil, false, nil when it carries none
// this authenticator knows (the next one may); and an error when it carries
// one this authenticator knows but rejects (an unverifiable certificate, an
// invalid token), which ends in a 401 even where anonymous access is on.
//
// Concurrency: Authenticate is called from many goroutines at once. It must
// not modify r, except that an authenticator may delete the header that
// carried the credential it consumed. The returned User belongs to the
// caller: the authenticator keeps no reference to it, and callers copy it
// before changing it if they shared it further.
type Authenticator interface {
	Authenticate(r *http.Request) (*filters.User, bool, error)
}

// AuthenticatorFunc adapts a function to an Authenticator.
type AuthenticatorFunc func(r *http.Request) (*filters.User, bool, error)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (*filters.User, bool, error) { return f(r) }

var _ Authenticator = AuthenticatorFunc(nil)

// union tries authenticators in order; see Union and FailOnError.
type union struct {
	auths       []Authenticator
	failOnError bool
}

var _ Authenticator = (*union)(nil)

// Union returns an Authenticator that tries auths in order and returns the
// first success. An error does not stop it: errors are returned, joined,
// only when no authenticator succeeded.
func Union(auths ...Authenticator) Authenticator {
	if len(auths) == 1 {
		return auths[0]
	}
	return &union{auths: slices.Clone(auths)}
}

// FailOnError returns an Authenticator that tries auths in order, returns the
// first success, and stops at the first error. Put anonymous last behind it:
// a request that presented a bad credential is then rejected, never served
// as anonymous.
func FailOnError(auths ...Authenticator) Authenticator {
	if len(auths) == 1 {
		return auths[0]
	}
	return &union{auths: slices.Clone(auths), failOnError: true}
}

func (u *union) Authenticate(r *http.Request) (*filters.User, bool, error) {
	var errs []error
	for _, a := range u.auths {
		user, ok, err := a.Authenticate(r)
		if err != nil {
			if u.failOnError {
				return nil, false, err
			}
			errs = append(errs, err)
			continue
		}
		if ok {
			return user, true, nil
		}
	}
	return nil, false, errors.Join(errs...)
}

// groupAdder adds AuthenticatedGroup; see WithAuthenticatedGroup.
type groupAdder struct{ auth Authenticator }

var _ Authenticator = groupAdder{}

// WithAuthenticatedGroup returns an Authenticator that adds
// AuthenticatedGroup to the users a authenticates, except AnonymousUser and
// users that already have AuthenticatedGroup or UnauthenticatedGroup.
func WithAuthenticatedGroup(a Authenticator) Authenticator { return groupAdder{auth: a} }

func (g groupAdder) Authenticate(r *http.Request) (*filters.User, bool, error) {
	u, ok, err := g.auth.Authenticate(r)
	if err != nil || !ok {
		return nil, ok, err
	}
	if u.Name == AnonymousUser || slices.Contains(u.Groups, AuthenticatedGroup) || slices.Contains(u.Groups, UnauthenticatedGroup) {
		return u, true, nil
	}
	groups := make([]string, 0, len(u.Groups)+1)
	groups = append(append(groups, u.Groups...), AuthenticatedGroup)
	return &filters.User{Name: u.Name, UID: u.UID, Groups: groups, Extra: u.Extra}, true, nil
}
