// This file holds the union of named authorizers.

package authz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// NamedAuthorizer is an authorizer and the name its reasons are reported
// under.
type NamedAuthorizer struct {
	// Name is unique within a union, e.g. "kubernetes.io/webhook".
	Name       string
	Authorizer Authorizer
}

type union struct{ chain []NamedAuthorizer }

var _ Authorizer = (*union)(nil)

// NewUnion returns an Authorizer that asks chain in order. The first Allow or
// Deny wins, with that authorizer's reason and error. When all have no
// opinion it returns NoOpinion, with the reasons joined as "<name>: <reason>"
// lines and the errors joined. An error from an authorizer with no opinion
// does not stop the chain.
func NewUnion(chain ...NamedAuthorizer) (Authorizer, error) {
	seen := make(map[string]bool, len(chain))
	for _, n := range chain {
		switch {
		case n.Name == "":
			return nil, fmt.Errorf("%w: empty name", ErrInvalidName)
		case seen[n.Name]:
			return nil, fmt.Errorf("%w: duplicate name %q", ErrInvalidName, n.Name)
		case n.Authorizer == nil:
			return nil, fmt.Errorf("%w: %q has no authorizer", ErrInvalidName, n.Name)
		}
		seen[n.Name] = true
	}
	return &union{chain: slices.Clone(chain)}, nil
}

func (u *union) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var (
		errs    []error
		reasons []string
	)
	for _, n := range u.chain {
		d, reason, err := n.Authorizer.Authorize(ctx, a)
		if d == DecisionAllow || d == DecisionDeny {
			return d, reason, err
		}
		if err != nil {
			errs = append(errs, err)
		}
		if reason != "" {
			reasons = append(reasons, n.Name+": "+reason)
		}
	}
	return DecisionNoOpinion, strings.Join(reasons, "\n"), errors.Join(errs...)
}
