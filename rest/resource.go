// This file holds the declaration of a served resource (Resource, Strategy),
// the handler's Config, and their validation.

package rest

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/annexapi/annex/field"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
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
	// Storage keeps the objects. Required unless the resource is computed
	// (Getter or Lister set), which excludes Storage.
	Storage storage.Interface
	// Getter and Lister serve a computed resource, one that is not stored but
	// computed on read (metrics-server's NodeMetrics): get and list only,
	// with selectors and Table output; watch and every write answer 405
	// MethodNotAllowed, and discovery lists only the verbs served. Either may
	// be nil (that verb is then 405 too). Set them with a nil Storage.
	Getter Getter
	Lister Lister
	// Events, on a computed resource, makes it watchable: Run puts each
	// object when it changes and removes those that go away, and watch is
	// served from a watch cache over those changes, with bookmarks and
	// WatchList, as for a stored resource (get and list stay the Getter's
	// and Lister's). The Builder fills WatchStorage with a watch.OnDemand,
	// which runs Events only while someone watches.
	Events EventSource
	// WatchStorage serves the watch of a computed resource: a
	// watch.OnDemand over Events (what the Builder makes), or a watch cache
	// over a feed of its changes (watch.New(watch.NewFeed(...))). Nil means
	// watch answers 405.
	WatchStorage WatchStore
	// Schema is the structural schema of the object (apiVersion, kind and
	// metadata may be left out). It is published in OpenAPI, and writes are
	// pruned and defaulted with it; unknown fields are then handled as the
	// fieldValidation parameter says (Strict, Warn (default) or Ignore). Nil
	// means any object: nothing is pruned and OpenAPI says "keep unknown
	// fields".
	Schema *schema.Props
	// PrinterColumns are the columns of kubectl get (Table output), after
	// the name column, as a CRD's additionalPrinterColumns. Empty means one
	// column, Age, from metadata.creationTimestamp.
	PrinterColumns []PrinterColumn
	// StatusSubresource serves <plural>/status: PUT and PATCH there change
	// only .status, and writes to the main resource ignore .status. Without
	// it, .status is an ordinary field.
	StatusSubresource bool
	// Scale, when not nil, serves <plural>/scale: an autoscaling/v1 Scale
	// of the object's replicas, as a CRD's scale subresource (kubectl
	// scale, HorizontalPodAutoscalers).
	Scale *Scale
	// Strategy holds the optional hooks of the write path.
	Strategy Strategy

	// StorageVersion marks the version objects are stored at, when a
	// stored resource is served at several versions: Resources with the
	// same Group and Plural and different Versions are the versions of one
	// resource. They share Storage, Kind, ListKind, Singular, Namespaced,
	// ShortNames and Categories; each has its own Schema, PrinterColumns,
	// Strategy and StatusSubresource. Exactly one of them is the storage
	// version; a resource of one version needs no mark. Objects written at
	// any version are stored at the storage version and read back at the
	// version asked for; objects stored at an earlier storage version are
	// converted when read, and stored at the new one by their next write.
	// Discovery prefers the version declared first.
	StorageVersion bool
	// Deprecated marks a deprecated version: every request to it gets a
	// "Warning: 299" header, DeprecationWarning or kube's default text
	// ("<group>/<version> <Kind> is deprecated; use <group>/<newer> <Kind>").
	Deprecated         bool
	DeprecationWarning string
	// Conversion converts objects between the versions of the resource. Set
	// it on one of them (the storage version, by convention); nil means
	// None, as a CRD's default: only apiVersion changes. ConversionFuncs
	// converts with Go functions; package conversion has the webhook.
	Conversion Converter
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
	// ValidateCreate and ValidateUpdate return field errors (package
	// field); any makes the request fail with kube's 422 Invalid, one cause
	// per error. ValidateUpdate runs on every write to the main resource, a
	// metadata-only one included (as kube's strategies; MetadataOnly tells
	// it apart), and not on <plural>/status.
	ValidateCreate func(ctx context.Context, obj Object) field.ErrorList
	ValidateUpdate func(ctx context.Context, obj, old Object) field.ErrorList
	// ValidateStatusUpdate is the status strategy's check, for writes to
	// <plural>/status (StatusSubresource): only .status changed there. Nil
	// means none beyond the schema.
	ValidateStatusUpdate func(ctx context.Context, obj, old Object) field.ErrorList
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
	// Admission, when not nil, runs mutating and validating admission on
	// every write. Nil means none.
	Admission Admitter
	// WatchEvents, when not nil, returns what to call with the size of each
	// event sent to a watcher of the resource (metrics); it is asked once
	// per watch. Nil records nothing.
	WatchEvents func(group, version, resource string) func(size int)
	// OpenAPITitle is the title of the /openapi/v2 document. Zero means
	// "Kubernetes".
	OpenAPITitle string
	// DisableManagedFields turns field management off: no
	// metadata.managedFields is recorded (a create drops the body's, an
	// update keeps the stored ones) and server-side apply answers 415.
	// The default, false, tracks every write as kube-apiserver does.
	DisableManagedFields bool
	// DeleteCollectionWorkers is how many deletes of a deletecollection run
	// at once (kube's --delete-collection-workers). Zero means 1.
	DeleteCollectionWorkers int
	// DisableResponseCompression sends every response uncompressed. The
	// default, as kube-apiserver's (feature gate APIResponseCompression),
	// gzips a response body larger than 128 KiB when the client accepts
	// gzip: a tenth of the bytes on the wire for several times the server's
	// CPU per byte.
	DisableResponseCompression bool
}

// PrinterColumn is one column of Table output, as a CRD's
// additionalPrinterColumns entry.
type PrinterColumn struct {
	// Name is the column header. Required.
	Name string
	// Type is integer, number, string, boolean or date (a date cell shows
	// the age, as "5m"). Required.
	Type string
	// Format is an optional OpenAPI format ("name" marks a name column).
	Format string
	// Description is shown by kubectl explain-like tools.
	Description string
	// Priority 0 shows the column by default; higher only with -o wide.
	Priority int32
	// JSONPath selects the value, e.g. ".spec.tier", in the simple form CRDs
	// allow: fields, [N] indexes and [*].
	JSONPath string
}

const defaultMinRequestTimeout = 1800 * time.Second

// kindName reports whether s is a CamelCase identifier: an upper-case
// letter, then letters and digits.
func kindName(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// versionName reports whether s looks like v1, v1beta1 or v2alpha3.
func versionName(s string) bool {
	digits := func(s string) (string, bool) {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return s[i:], i > 0
	}
	rest, ok := strings.CutPrefix(s, "v")
	if !ok {
		return false
	}
	if rest, ok = digits(rest); !ok {
		return false
	}
	if rest == "" {
		return true
	}
	for _, q := range []string{"alpha", "beta"} {
		if r, ok := strings.CutPrefix(rest, q); ok {
			r, ok = digits(r)
			return ok && r == ""
		}
	}
	return false
}

func label(s string) bool { return len(meta.IsDNS1123Label(s)) == 0 }

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
		case len(meta.IsDNS1123Subdomain(r.Group)) > 0:
			bad(r, ErrInvalidResource, "group must be a DNS-1123 subdomain")
		}
		if !versionName(r.Version) {
			bad(r, ErrInvalidResource, "version must look like v1, v1beta1 or v1alpha1")
		}
		if !label(r.Plural) {
			bad(r, ErrInvalidResource, "plural must be a lower-case DNS-1123 label")
		}
		if !label(r.Singular) {
			bad(r, ErrInvalidResource, "singular must be a lower-case DNS-1123 label")
		}
		if !kindName(r.Kind) {
			bad(r, ErrInvalidResource, "kind must be a CamelCase identifier")
		}
		if !kindName(r.ListKind) {
			bad(r, ErrInvalidResource, "list kind must be a CamelCase identifier")
		}
		for _, s := range r.ShortNames {
			if !label(s) {
				bad(r, ErrInvalidResource, "short name "+s+" must be a lower-case DNS-1123 label")
			}
		}
		for _, c := range r.Categories {
			if c == "" || strings.ContainsAny(c, " /") {
				bad(r, ErrInvalidResource, "category "+c+" is malformed")
			}
		}
		if r.Schema != nil {
			for _, e := range schema.ValidateStructural(r.Schema) {
				bad(r, ErrInvalidResource, "schema: "+e.Error())
			}
		}
		for _, f := range r.Strategy.SelectableFields {
			if f == "" || f == "metadata.name" || f == "metadata.namespace" || strings.HasPrefix(f, ".") || strings.HasSuffix(f, ".") || strings.Contains(f, "..") {
				bad(r, ErrInvalidResource, "selectable field "+f+" is malformed or built in")
			}
		}
		for _, c := range r.PrinterColumns {
			switch c.Type {
			case meta.ColumnTypeString, meta.ColumnTypeInteger, meta.ColumnTypeNumber, meta.ColumnTypeBoolean, meta.ColumnTypeDate:
			default:
				bad(r, ErrInvalidResource, "printer column "+c.Name+" has type "+c.Type+"; want integer, number, string, boolean or date")
			}
			if c.Name == "" {
				bad(r, ErrInvalidResource, "printer column without a name")
			}
			if _, err := parseJSONPath(c.JSONPath); err != nil {
				bad(r, ErrInvalidResource, "printer column "+c.Name+": "+err.Error())
			}
		}
		for _, f := range r.Strategy.SelectableFields {
			if !isFieldPath(f) {
				bad(r, ErrInvalidResource, "selectable field "+strconv.Quote(f)+": want a dotted path of field names, as spec.owner")
			}
		}
		if s := r.Scale; s != nil {
			for _, p := range []struct{ name, path, under string }{
				{"specReplicasPath", s.SpecReplicasPath, ".spec."}, {"statusReplicasPath", s.StatusReplicasPath, ".status."},
				{"labelSelectorPath", s.LabelSelectorPath, ""}} {
				switch {
				case p.path == "" && p.name == "labelSelectorPath":
				case !strings.HasPrefix(p.path, p.under) || !isFieldPath(p.path[1:]):
					bad(r, ErrInvalidResource, "scale "+p.name+" "+strconv.Quote(p.path)+": want a path under "+p.under+" such as "+p.under+"replicas")
				case p.name == "labelSelectorPath" && !strings.HasPrefix(p.path, ".spec.") && !strings.HasPrefix(p.path, ".status."):
					bad(r, ErrInvalidResource, "scale labelSelectorPath "+strconv.Quote(p.path)+": want a path under .spec. or .status.")
				}
			}
		}
		switch computed := r.Getter != nil || r.Lister != nil; {
		case r.Storage == nil && !computed:
			bad(r, ErrNoStorage, "")
		case r.Storage != nil && computed:
			bad(r, ErrInvalidResource, "a resource has Storage or Getter/Lister (computed), not both")
		case computed && r.StatusSubresource:
			bad(r, ErrInvalidResource, "a computed resource has no status subresource")
		case !computed && (r.Events != nil || r.WatchStorage != nil):
			bad(r, ErrInvalidResource, "Events and WatchStorage are for a computed resource (Getter/Lister); a stored one is watched through its Storage")
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
	errs = append(errs, validateVersionSets(rs)...)
	return errors.Join(errs...)
}

// versionSets groups the stored resources by group and plural, in the
// order of their first declaration; each group holds the versions of one
// resource, completed.
func versionSets(rs []Resource) [][]Resource {
	type gr struct{ g, p string }
	at := map[gr]int{}
	var sets [][]Resource
	for _, r := range rs {
		if r.Storage == nil {
			continue // computed: each version stands alone
		}
		k := gr{r.Group, r.Plural}
		i, ok := at[k]
		if !ok {
			i = len(sets)
			at[k] = i
			sets = append(sets, nil)
		}
		sets[i] = append(sets[i], r.complete())
	}
	return sets
}

// validateVersionSets checks the versions of each resource served at
// several: one storage version, what they share, one Conversion.
func validateVersionSets(rs []Resource) []error {
	var errs []error
	for _, set := range versionSets(rs) {
		first := set[0]
		bad := func(msg string) {
			errs = append(errs, &ConfigError{Resource: first.Plural + "." + first.Group, Err: ErrInvalidResource, Msg: msg})
		}
		var storageVersions []string
		var conv Converter
		convs := 0
		for _, r := range set {
			if r.StorageVersion {
				storageVersions = append(storageVersions, r.Version)
			}
			if r.Conversion != nil {
				conv = r.Conversion
				convs++
			}
		}
		if len(set) == 1 {
			continue
		}
		switch {
		case len(storageVersions) == 0:
			bad("served at several versions: exactly one must be the StorageVersion, none is")
		case len(storageVersions) > 1:
			bad("served at several versions: exactly one must be the StorageVersion, not " + strings.Join(storageVersions, " and "))
		}
		if convs > 1 {
			bad("Conversion is set on more than one version; set it once")
		}
		for _, r := range set[1:] {
			for _, d := range []struct {
				what string
				same bool
			}{
				{"Kind", r.Kind == first.Kind},
				{"ListKind", r.ListKind == first.ListKind},
				{"Singular", r.Singular == first.Singular},
				{"Namespaced", r.Namespaced == first.Namespaced},
				{"ShortNames", slices.Equal(r.ShortNames, first.ShortNames)},
				{"Categories", slices.Equal(r.Categories, first.Categories)},
				{"Storage", sameStore(r.Storage, first.Storage)},
			} {
				if !d.same {
					bad("versions " + first.Version + " and " + r.Version + " differ in " + d.what + "; the versions of a resource share it")
				}
			}
		}
		if cf, ok := funcsOf(conv); ok && len(storageVersions) == 1 {
			hub := cf.Hub
			if hub == "" {
				hub = storageVersions[0]
			}
			served := map[string]bool{}
			for _, r := range set {
				served[r.Version] = true
			}
			if !served[hub] {
				bad("ConversionFuncs.Hub " + hub + " is not one of the versions")
			}
			for _, r := range set {
				f := cf.Funcs[r.Version]
				if r.Version != hub && (f.ToHub == nil || f.FromHub == nil) {
					bad("ConversionFuncs: version " + r.Version + " needs ToHub and FromHub (the hub is " + hub + ")")
				}
			}
			for v := range cf.Funcs {
				if !served[v] {
					bad("ConversionFuncs: functions for " + v + ", which is not one of the versions")
				}
			}
		}
	}
	return errs
}

// funcsOf returns the ConversionFuncs a Converter is, by value or pointer.
func funcsOf(c Converter) (ConversionFuncs, bool) {
	switch c := c.(type) {
	case ConversionFuncs:
		return c, true
	case *ConversionFuncs:
		if c != nil {
			return *c, true
		}
	}
	return ConversionFuncs{}, false
}

// sameStore compares two stores, false for values that cannot be compared.
func sameStore(a, b storage.Interface) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// isFieldPath says whether f is a dotted path of JSON field names
// ("spec.owner"), the form CRDs' selectableFields take (without the leading
// dot).
func isFieldPath(f string) bool {
	if f == "" {
		return false
	}
	for _, part := range strings.Split(f, ".") {
		if part == "" {
			return false
		}
		for _, c := range part {
			if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				return false
			}
		}
	}
	return true
}
