package authz

import (
	"context"

	"github.com/annexapi/annex/cellib"
)

// CELAuthorizer is a as CEL expressions see it (package cellib's authz
// library): the authorizer variable of admission policies and
// matchConditions checks with it, as kube-apiserver's do with its own. Nil
// stays nil.
func CELAuthorizer(a Authorizer) cellib.Authorizer {
	if a == nil {
		return nil
	}
	return cellib.AuthorizerFunc(func(ctx context.Context, attrs cellib.Attributes) (cellib.Decision, string, error) {
		d, reason, err := a.Authorize(ctx, Attributes(attrs))
		switch d {
		case DecisionAllow:
			return cellib.DecisionAllow, reason, err
		case DecisionDeny:
			return cellib.DecisionDeny, reason, err
		}
		return cellib.DecisionNoOpinion, reason, err
	})
}
