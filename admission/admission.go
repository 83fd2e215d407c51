// This file holds the core of admission: the attributes of a write, the
// Mutator and Validator interfaces, and the Chain that runs them in the
// Kubernetes order (all mutators, then schema validation, then all
// validators).

package admission

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/annexapi/annex/internal/attrs"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
	"github.com/prometheus/client_golang/prometheus"
)

// Operations, as AdmissionReview spells them.
const (
	Create  = attrs.Create
	Update  = attrs.Update
	Delete  = attrs.Delete
	Connect = attrs.Connect
)

// Attributes describe one write being admitted: the one type the REST layer
// fills and every mutator and validator reads (package attrs, so that rest
// names it without importing admission). A Mutator may replace or edit
// Object; nothing else may change it.
type Attributes = attrs.Admission

// Mutator may change a write's object before it is validated. Mutate is
// called concurrently for different requests; it must only change a.Object.
type Mutator interface {
	Mutate(ctx context.Context, a *Attributes) error
}

// Validator accepts or rejects a write; it must not change anything.
// Validate is called concurrently, also for the same request (validating
// webhooks run in parallel), so it must not write to a.
type Validator interface {
	Validate(ctx context.Context, a *Attributes) error
}

// MutatorFunc adapts a function to Mutator.
type MutatorFunc func(ctx context.Context, a *Attributes) error

// Mutate calls f.
func (f MutatorFunc) Mutate(ctx context.Context, a *Attributes) error { return f(ctx, a) }

// ValidatorFunc adapts a function to Validator.
type ValidatorFunc func(ctx context.Context, a *Attributes) error

// Validate calls f.
func (f ValidatorFunc) Validate(ctx context.Context, a *Attributes) error { return f(ctx, a) }

var (
	_ Mutator   = MutatorFunc(nil)
	_ Validator = ValidatorFunc(nil)
)

// Named is an optional interface of a Mutator or Validator: its name labels
// metrics (admission_controller_admission_duration_seconds{name}).
type Named interface{ Name() string }

// Reinvocable is an optional interface of a Mutator: true means the mutator
// wants to run again when a later mutator changed the object after it ran
// (reinvocationPolicy IfNeeded). The chain then re-runs every mutator once.
type Reinvocable interface{ Reinvocable() bool }

// Resource declares one resource the chain validates against its schema.
type Resource struct {
	// Group, Version and Resource (plural) identify it.
	Group, Version, Resource string
	// Kind is used in 422 messages ("Kind.group \"name\" is invalid").
	Kind string
	// Schema is the structural schema of the whole object; nil means no
	// schema validation for this resource.
	Schema *schema.Props
	// Subresources whose writes carry the whole object and are validated
	// against Schema too (e.g. "status"); "" (the main resource) always is.
	Subresources []string
}

// Config configures a Chain. The zero value is a chain that admits
// everything.
type Config struct {
	// Resources with a schema are validated at the schema step; zero means none.
	Resources []Resource
	// Mutators run in order; the first error stops the chain. The Kubernetes
	// order is namespace lifecycle, mutating policies, mutating webhooks.
	Mutators []Mutator
	// Validators run in order after schema validation; the first error
	// stops the chain. The Kubernetes order is namespace lifecycle,
	// validating policies, validating webhooks.
	Validators []Validator
	// Schema tunes schema validation; the zero value is Kubernetes' limits.
	Schema SchemaOptions
	// Registerer receives the admission metrics; nil means no metrics.
	Registerer prometheus.Registerer
	// ObserveRejection is called with the stage that rejected a write:
	// StageMutating, StageSchema or StageValidating (wire it to the
	// server's annex_request_rejections_total{stage}); nil means none.
	ObserveRejection func(stage string)
}

// The stages admission reports rejections under.
const (
	StageMutating   = "mutating-admission"
	StageSchema     = "schema-validation"
	StageValidating = "validating-admission"
)

// Chain runs admission for every write: Mutate (all mutators in order, then
// once more if one asked for reinvocation), CheckSchema (the resource's
// schema and rules), then Validate (all validators). It is safe for concurrent use. Update and patch call Mutate
// and Validate again on every conflict retry, as Kubernetes does.
type Chain struct {
	mutators   []Mutator
	validators []Validator
	schemas    map[schemaKey]*SchemaValidator
	metrics    *metrics
	observe    func(stage string)
}

type schemaKey struct{ group, version, resource, subresource string }

// New compiles every schema (and its CEL rules) and returns the chain; a
// schema that does not compile is an error here, never at request time.
func New(cfg Config) (*Chain, error) {
	c := &Chain{mutators: cfg.Mutators, validators: cfg.Validators, schemas: map[schemaKey]*SchemaValidator{}, observe: cfg.ObserveRejection}
	if c.observe == nil {
		c.observe = func(string) {}
	}
	for i, m := range cfg.Mutators {
		if m == nil {
			return nil, fmt.Errorf("%w: Mutators[%d] is nil", ErrInvalidConfig, i)
		}
	}
	for i, v := range cfg.Validators {
		if v == nil {
			return nil, fmt.Errorf("%w: Validators[%d] is nil", ErrInvalidConfig, i)
		}
	}
	for _, r := range cfg.Resources {
		if r.Schema == nil {
			continue
		}
		sv, err := NewSchemaValidator(r.Schema, meta.GroupKind{Group: r.Group, Kind: r.Kind}, cfg.Schema)
		if err != nil {
			return nil, fmt.Errorf("%s.%s/%s: %w", r.Resource, r.Group, r.Version, err)
		}
		for _, sub := range append([]string{""}, r.Subresources...) {
			c.schemas[schemaKey{r.Group, r.Version, r.Resource, sub}] = sv
		}
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	c.metrics = m
	for _, x := range append(anys(cfg.Mutators), anys(cfg.Validators)...) {
		if u, ok := x.(metricsUser); ok {
			u.useMetrics(m)
		}
	}
	return c, nil
}

// metricsUser is a plugin that records metrics of its own (webhook calls,
// policy checks): New gives it the chain's.
type metricsUser interface{ useMetrics(m *metrics) }

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// Mutate runs the mutators in order and stops at the first error. When a
// Reinvocable mutator ran and a later one changed the object, or a mutator
// called RequestReinvocation, all mutators run exactly once more with
// a.IsReinvoke() true.
func (c *Chain) Mutate(ctx context.Context, a *Attributes) (err error) {
	start := time.Now()
	defer func() { c.metrics.observeStep(stepAdmit, a.Operation, err, time.Since(start)) }()
	a.SetReinvoke(false)
	defer func() {
		if err != nil {
			c.observe(StageMutating)
		}
	}()
	if err := c.mutatePass(ctx, a); err != nil {
		return err
	}
	if !a.ReinvocationRequested() {
		return nil
	}
	a.SetReinvoke(true)
	defer a.SetReinvoke(false)
	return c.mutatePass(ctx, a)
}

func (c *Chain) mutatePass(ctx context.Context, a *Attributes) error {
	wantsRerun := false // a Reinvocable mutator already ran in this pass
	for _, m := range c.mutators {
		var before map[string]any
		if wantsRerun && !a.IsReinvoke() && !a.ReinvocationRequested() && a.Object != nil {
			before = deepCopyMap(a.Object)
		}
		t := time.Now()
		err := m.Mutate(ctx, a)
		c.metrics.observeController(nameOf(m), stepAdmit, a.Operation, err, time.Since(t))
		if err != nil {
			return toStatus(a, err)
		}
		if before != nil && !reflect.DeepEqual(before, a.Object) {
			a.RequestReinvocation()
		}
		if r, ok := m.(Reinvocable); ok && r.Reinvocable() {
			wantsRerun = true
		}
	}
	return nil
}

// CheckSchema validates the object of a create or update against its
// resource's structural schema and x-kubernetes-validations rules and
// returns the causes, in kube's order for a custom resource (the schema,
// embedded resources and list types, then the rules, which do not run when
// a cause of prior, the ObjectMeta and scale causes the caller found, or of
// the schema blocks them). The status subresource checks the status alone.
// The REST layer's validate step calls it (rest.SchemaChecker), between
// ObjectMeta and the strategy's checks, so that all of them make one 422
// before validating admission, as kube's custom resource strategy does.
func (c *Chain) CheckSchema(ctx context.Context, a *Attributes, prior []meta.StatusCause) []meta.StatusCause {
	sv := c.schemas[schemaKey{a.Group, a.Version, a.Resource, a.Subresource}]
	if sv == nil || a.Object == nil || (a.Operation != Create && a.Operation != Update) {
		return nil
	}
	t := time.Now()
	causes := sv.check(ctx, a.Object, a.OldObject, a.Subresource == "status", prior)
	var err error
	if len(causes) > 0 {
		err = meta.NewInvalid(sv.gk, a.ObjectName(), causes)
		c.observe(StageSchema)
	}
	c.metrics.observeController("schema", stepValidate, a.Operation, err, time.Since(t))
	return causes
}

// Validate runs the validators in order and stops at the first error. It
// does not change a. Schema validation is CheckSchema's, before it.
func (c *Chain) Validate(ctx context.Context, a *Attributes) (err error) {
	start := time.Now()
	defer func() { c.metrics.observeStep(stepValidate, a.Operation, err, time.Since(start)) }()
	for _, v := range c.validators {
		t := time.Now()
		err := v.Validate(ctx, a)
		c.metrics.observeController(nameOf(v), stepValidate, a.Operation, err, time.Since(t))
		if err != nil {
			c.observe(StageValidating)
			return toStatus(a, err)
		}
	}
	return nil
}

// SchemaValidatorFor returns the compiled schema validator of a resource, if
// it declared a schema (the REST layer's fieldValidation uses it).
func (c *Chain) SchemaValidatorFor(group, version, resource, subresource string) (*SchemaValidator, bool) {
	sv, ok := c.schemas[schemaKey{group, version, resource, subresource}]
	return sv, ok
}

func nameOf(x any) string {
	if n, ok := x.(Named); ok {
		return n.Name()
	}
	return fmt.Sprintf("%T", x)
}

// toStatus makes sure what the chain returns is a *meta.Status: a plugin's
// plain error becomes a 403 Forbidden on the object, as admission.NewForbidden
// does in Kubernetes.
func toStatus(a *Attributes, err error) error {
	var st *meta.Status
	if errors.As(err, &st) {
		return st
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return meta.NewTimeout(err.Error(), 0)
	}
	return forbidden(a, err.Error())
}

// forbidden is admission.NewForbidden: 403 `res.group "name" is forbidden: msg`.
func forbidden(a *Attributes, msg string) *meta.Status {
	return meta.NewForbidden(a.GroupResource(), a.ObjectName(), msg)
}

// deepCopyMap copies a decoded JSON object.
func deepCopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return deepCopyMap(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopyValue(e)
		}
		return out
	}
	return v
}
