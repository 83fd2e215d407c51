// This file holds the declaration of a served resource (Resource, Strategy),
// the handler's Config, and their validation.

package rest

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

// Object is an object as the write path sees it: the request body decoded
// into generic JSON (numbers are json.Number). Hooks may modify it in place.
type Object = map[string]any

// Resource declares one served resource. Zero values are defaults.
type Resource struct {
	// Group and Version name the API group version, e.g.
	// "platform.example.com" and "v1alpha1". Both are required.
	Group   string
	Version string
	// Plural is the resource name in paths, e.g. "environments". Required.
	Plural string
	// Singular is the singular name; empty means lower-case Kind.
	Singular string
	// Kind is the object kind, e.g. "Environment". Required.
	Kind string
	// ListKind is the kind of lists; empty means Kind+"List".
	ListKind string
	// Namespaced is true for namespaced resources, false for cluster-scoped.
	Namespaced bool
	// ShortNames and Categories are advertised in discovery (kubectl uses
	// them: "kubectl get env", "kubectl get all").
	ShortNames []string
	Categories []string
	// Storage keeps the objects. Required.
	Storage storage.Interface
	// Strategy holds the optional hooks of the write path.
	Strategy Strategy
}

// Strategy holds a resource's optional hooks, as k8s.io/apiserver's
// RESTCreateStrategy and RESTUpdateStrategy. A nil hook does nothing. Hooks run
// on the request goroutine; PrepareForUpdate and ValidateUpdate may run more
// than once for one request (once per storage conflict retry).
type Strategy struct {
	// PrepareForCreate normalises a new object before validation (e.g. clears
	// status).
	PrepareForCreate func(ctx context.Context, obj Object)
	// PrepareForUpdate normalises an updated object before validation, given
	// the stored one (e.g. keeps the old status).
	PrepareForUpdate func(ctx context.Context, obj, old Object)
	// ValidateCreate and ValidateUpdate return field errors; any makes the
	// request fail with 422 Invalid listing them as causes.
	ValidateCreate func(ctx context.Context, obj Object) []meta.StatusCause
	ValidateUpdate func(ctx context.Context, obj, old Object) []meta.StatusCause
	// SelectableFields are the JSON paths, beyond metadata.name and
	// metadata.namespace, that field selectors may use, e.g. "spec.owner" (as a
	// CRD's selectableFields). A value is the field's string, number or bool
	// in its JSON spelling; a missing field is "".
	SelectableFields []string
	// AllowUnconditionalUpdate lets a PUT without metadata.resourceVersion
	// overwrite the stored object; false answers 422 as CRDs do.
	AllowUnconditionalUpdate bool
	// AllowCreateOnUpdate lets a PUT create a missing object (201); false
	// answers 404.
	AllowCreateOnUpdate bool
}

// Config configures NewHandler. Zero values are defaults.
type Config struct {
	// Resources are the served resources. Versions of a group are advertised
	// in the order their first resource appears; the first is preferred.
	Resources []Resource
	// MinRequestTimeout is the base of a watch's duration when the request
	// has no timeoutSeconds: a random duration in [base, 2×base), as
	// k8s.io/apiserver's --min-request-timeout. Zero means 1800s.
	MinRequestTimeout time.Duration
	// Shutdown, when not nil, ends every open watch cleanly once it is done.
	Shutdown context.Context
}

const defaultMinRequestTimeout = 1800 * time.Second

var (
	// dns1123Label and dns1123Subdomain are k8s's name patterns; compiled
	// regexps are immutable, so sharing them is safe.
	dns1123Label     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	kindPattern      = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	versionPattern   = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)
)

// complete returns r with defaults filled in.
func (r Resource) complete() Resource {
	if r.Singular == "" {
		r.Singular = strings.ToLower(r.Kind)
	}
	if r.ListKind == "" {
		r.ListKind = r.Kind + "List"
	}
	return r
}

func (r Resource) id() string { return r.Plural + "." + r.Group + "/" + r.Version }

// validateResources checks every declaration and returns every problem.
func validateResources(rs []Resource) error {
	var errs []error
	bad := func(r Resource, sentinel error, msg string) {
		errs = append(errs, &ConfigError{Resource: r.id(), Err: sentinel, Msg: msg})
	}
	type gv struct{ g, v string }
	plurals := map[gv]map[string]bool{}
	kinds := map[gv]map[string]bool{}
	names := map[string]map[string]string{} // group → short or plural name → owner plural
	for _, r := range rs {
		r = r.complete()
		switch {
		case r.Group == "":
			bad(r, ErrInvalidResource, "group is required (the core group is not served)")
		case len(r.Group) > 253 || !dns1123Subdomain.MatchString(r.Group):
			bad(r, ErrInvalidResource, "group must be a DNS-1123 subdomain")
		}
		if !versionPattern.MatchString(r.Version) {
			bad(r, ErrInvalidResource, "version must look like v1, v1beta1 or v1alpha1")
		}
		if len(r.Plural) > 63 || !dns1123Label.MatchString(r.Plural) {
			bad(r, ErrInvalidResource, "plural must be a lower-case DNS-1123 label")
		}
		if len(r.Singular) > 63 || !dns1123Label.MatchString(r.Singular) {
			bad(r, ErrInvalidResource, "singular must be a lower-case DNS-1123 label")
		}
		if !kindPattern.MatchString(r.Kind) {
			bad(r, ErrInvalidResource, "kind must be a CamelCase identifier")
		}
		if !kindPattern.MatchString(r.ListKind) {
			bad(r, ErrInvalidResource, "list kind must be a CamelCase identifier")
		}
		for _, s := range r.ShortNames {
			if len(s) > 63 || !dns1123Label.MatchString(s) {
				bad(r, ErrInvalidResource, "short name "+s+" must be a lower-case DNS-1123 label")
			}
		}
		for _, c := range r.Categories {
			if c == "" || strings.ContainsAny(c, " /") {
				bad(r, ErrInvalidResource, "category "+c+" is malformed")
			}
		}
		for _, f := range r.Strategy.SelectableFields {
			if f == "" || f == "metadata.name" || f == "metadata.namespace" || strings.HasPrefix(f, ".") || strings.HasSuffix(f, ".") || strings.Contains(f, "..") {
				bad(r, ErrInvalidResource, "selectable field "+f+" is malformed or built in")
			}
		}
		if r.Storage == nil {
			bad(r, ErrNoStorage, "")
		}
		k := gv{r.Group, r.Version}
		if plurals[k] == nil {
			plurals[k], kinds[k] = map[string]bool{}, map[string]bool{}
		}
		if plurals[k][r.Plural] {
			bad(r, ErrDuplicateResource, "resource declared twice")
		}
		plurals[k][r.Plural] = true
		if kinds[k][r.Kind] {
			bad(r, ErrDuplicateResource, "kind "+r.Kind+" declared twice in "+r.Group+"/"+r.Version)
		}
		kinds[k][r.Kind] = true
		if names[r.Group] == nil {
			names[r.Group] = map[string]string{}
		}
		for _, s := range append([]string{r.Plural, r.Singular}, r.ShortNames...) {
			if owner, ok := names[r.Group][s]; ok && owner != r.Plural {
				bad(r, ErrDuplicateResource, "name "+s+" is also used by "+owner)
			}
			names[r.Group][s] = r.Plural
		}
	}
	return errors.Join(errs...)
}
