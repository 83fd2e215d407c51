// This file is the one place that knows the order of the stages a request
// walks through, as data, and the check that rejects an order in which a stage
// would read something no earlier stage provides.

package annex

import (
	"fmt"
	"net/http"
	"strings"
)

// Provision names a value a stage puts into the request context for the stages
// after it.
type Provision string

// The provisions of the built-in stages.
const (
	// ProvidesAuditID is the request's audit ID (filters.AuditIDFrom).
	ProvidesAuditID Provision = "audit-id"
	// ProvidesRequestInfo is the resolved *filters.RequestInfo.
	ProvidesRequestInfo Provision = "request-info"
	// ProvidesDeadline is the request deadline on the context.
	ProvidesDeadline Provision = "deadline"
	// ProvidesWarnings is the warning recorder (filters.AddWarning).
	ProvidesWarnings Provision = "warnings"
	// ProvidesUser is the authenticated *filters.User.
	ProvidesUser Provision = "user"
	// ProvidesImpersonator is the user who sent an impersonating request
	// (filters.ImpersonatorFrom); ProvidesUser is then the impersonated one.
	ProvidesImpersonator Provision = "impersonator"
	// ProvidesAuthorized means the request was authorized: only handlers run
	// after it.
	ProvidesAuthorized Provision = "authorized"
)

// Stage is one step of the handler chain. Filter wraps the rest of the chain;
// Needs and Provides say what it reads from and adds to the request context.
type Stage struct {
	// Name names the stage in errors, logs, metrics and audit events.
	Name string
	// Needs lists what the stage reads; every entry must be provided by an
	// earlier stage.
	Needs []Provision
	// Provides lists what the stage adds for later stages.
	Provides []Provision
	// Filter is the stage itself; nil means the stage is off (it then provides
	// nothing).
	Filter func(http.Handler) http.Handler
}

// checkOrder returns every problem with stages in the given order: a repeated
// or empty name, a need no earlier enabled stage provides.
func checkOrder(stages []Stage) []error {
	var errs []error
	provided := map[Provision]string{}
	names := map[string]bool{}
	for i, s := range stages {
		if s.Name == "" {
			errs = append(errs, fmt.Errorf("stage %d has no name", i))
		} else if names[s.Name] {
			errs = append(errs, fmt.Errorf("stage %q appears twice", s.Name))
		}
		names[s.Name] = true
		if s.Filter == nil {
			continue
		}
		for _, need := range s.Needs {
			if _, ok := provided[need]; !ok {
				errs = append(errs, fmt.Errorf("stage %q needs %q, which no earlier stage provides", s.Name, need))
			}
		}
		for _, p := range s.Provides {
			if _, ok := provided[p]; !ok {
				provided[p] = s.Name
			}
		}
	}
	return errs
}

// chain wraps h in the enabled stages so that stages[0] runs first.
func chain(stages []Stage, h http.Handler) http.Handler {
	for i := len(stages) - 1; i >= 0; i-- {
		if stages[i].Filter != nil {
			h = stages[i].Filter(h)
		}
	}
	return h
}

// insertStage places s after the stage named after ("" puts it first). It
// fails when no stage has that name.
func insertStage(stages []Stage, after string, s Stage) ([]Stage, error) {
	if after == "" {
		return append([]Stage{s}, stages...), nil
	}
	for i := range stages {
		if stages[i].Name == after {
			out := make([]Stage, 0, len(stages)+1)
			out = append(out, stages[:i+1]...)
			out = append(out, s)
			return append(out, stages[i+1:]...), nil
		}
	}
	names := make([]string, len(stages))
	for i := range stages {
		names[i] = stages[i].Name
	}
	return nil, fmt.Errorf("stage %q: no stage named %q to insert after (stages: %s)", s.Name, after, strings.Join(names, ", "))
}
