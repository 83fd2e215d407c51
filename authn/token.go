// This file holds bearer-token authentication: the TokenAuthenticator
// contract, the Authorization header reader, and the token file.

package authn

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/annexapi/annex/filters"
)

// TokenAuthenticator authenticates a bearer token.
//
// AuthenticateToken returns the user and true for a token it accepts; nil,
// false, nil for a token it does not know (another may); an error for a
// token it knows but rejects, or when it could not decide (a webhook was
// down): the request is then a 401, never anonymous.
//
// Concurrency: called from many goroutines at once. ctx carries the
// request's deadline. The returned User belongs to the caller.
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (*filters.User, bool, error)
}

// TokenAuthenticatorFunc adapts a function to a TokenAuthenticator.
type TokenAuthenticatorFunc func(ctx context.Context, token string) (*filters.User, bool, error)

// AuthenticateToken calls f(ctx, token).
func (f TokenAuthenticatorFunc) AuthenticateToken(ctx context.Context, token string) (*filters.User, bool, error) {
	return f(ctx, token)
}

var _ TokenAuthenticator = TokenAuthenticatorFunc(nil)

// BearerToken authenticates the "Authorization: Bearer <token>" header with
// token authenticators tried in order (union semantics: the first that
// accepts wins; errors are returned only if none accepts).
type BearerToken struct {
	auths []TokenAuthenticator
}

var _ Authenticator = (*BearerToken)(nil)

// NewBearerToken returns the bearer-token authenticator over auths (nil
// entries are skipped).
func NewBearerToken(auths ...TokenAuthenticator) *BearerToken {
	return &BearerToken{auths: slices.DeleteFunc(slices.Clone(auths), func(a TokenAuthenticator) bool { return a == nil })}
}

// Authenticate reads the header as Kubernetes does: trimmed, split on
// spaces into at most three parts, scheme "bearer" in any case. No header,
// another scheme, or an empty token is not-ok; a token nobody accepts is
// ErrInvalidToken (a 401). On success the Authorization header is deleted.
func (b *BearerToken) Authenticate(r *http.Request) (*filters.User, bool, error) {
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	if auth == "" {
		return nil, false, nil
	}
	// The scheme, then the token up to the next space, if any: what
	// strings.SplitN(auth, " ", 3) gives as its first two parts, without
	// the slice.
	scheme, rest, found := strings.Cut(auth, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return nil, false, nil
	}
	token, _, _ := strings.Cut(rest, " ")
	if token == "" {
		// "Authorization: Bearer  <token>": Kubernetes warns and ignores it.
		return nil, false, nil
	}
	var errs []error
	for _, a := range b.auths {
		u, ok, err := a.AuthenticateToken(r.Context(), token)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok && u != nil {
			r.Header.Del("Authorization")
			return u, true, nil
		}
	}
	if len(errs) == 0 {
		return nil, false, ErrInvalidToken
	}
	return nil, false, errors.Join(errs...)
}

// TokenFile is a static token file: CSV rows token,user,uid[,"group1,group2"].
type TokenFile struct {
	tokens map[string]*filters.User
}

var _ TokenAuthenticator = (*TokenFile)(nil)

// NewTokenFile reads the token file at path (kube-apiserver's
// --token-auth-file format). A row with fewer than three columns is
// ErrTokenFile; a row with an empty token is skipped; for a repeated token
// the last row wins. Comment lines (#) and blank lines are skipped.
func NewTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTokenFile, err)
	}
	defer f.Close()
	return ParseTokenFile(f)
}

// ParseTokenFile is NewTokenFile on the file's contents.
func ParseTokenFile(rd io.Reader) (*TokenFile, error) {
	r := csv.NewReader(rd)
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	r.Comment = '#'
	tf := &TokenFile{tokens: map[string]*filters.User{}}
	for line := 1; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrTokenFile, err)
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("%w: line %d: token file must have at least 3 columns (token, user name, user uid), found %d", ErrTokenFile, line, len(rec))
		}
		if rec[0] == "" {
			continue
		}
		u := &filters.User{Name: rec[1], UID: rec[2]}
		if len(rec) > 3 {
			for g := range strings.SplitSeq(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		tf.tokens[rec[0]] = u
	}
	return tf, nil
}

// AuthenticateToken returns a copy of the token's user, or not-ok.
func (tf *TokenFile) AuthenticateToken(_ context.Context, token string) (*filters.User, bool, error) {
	u, ok := tf.tokens[token]
	if !ok {
		return nil, false, nil
	}
	return &filters.User{Name: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups)}, true, nil
}
