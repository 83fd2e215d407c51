// This file holds the Manager: kube-apiserver's field manager chain
// (version check, last-applied upgrade and sync, skip of untracked objects,
// the cap on update managers, manager identifiers, entry times, the strip
// of server-owned metadata, and the structured merge), over decoded objects.

package managedfields

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/merge"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
)

// LastAppliedAnnotation is where kubectl's client-side apply keeps the
// configuration it last applied.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Kube's constants: at most this many Update entries are kept (the oldest
// merge into one "ancient-changes" entry per version), the manager that
// owns the fields of an object applied to for the first time, and the one
// kubectl's client-side apply upgrade is for.
const (
	maxUpdateManagers  = 10
	ancientChanges     = "ancient-changes"
	beforeFirstApply   = "before-first-apply"
	kubectlManager     = "kubectl"
	currentOperation   = "current-operation"
	maxAnnotationBytes = 256 * 1024
)

// Config describes the resource whose objects a Manager tracks.
type Config struct {
	// APIVersion is group/version, Kind the objects' kind.
	APIVersion, Kind string
	// Schema is the structural schema of the objects; nil means any
	// object (every field deduced from the value).
	Schema *schema.Props
	// StatusSubresource says .status is written only through the status
	// subresource: the main resource ignores it and the status subresource
	// ignores .spec, as a CRD's reset fields.
	StatusSubresource bool
	// Versions are the schemas of the resource's other versions, by
	// apiVersion, when it is served at several; Convert converts an object
	// to one of them. With both, the fields a manager recorded at another
	// version are compared on the object converted to that version, as
	// kube-apiserver's field manager does; without, entries of another
	// version are compared as they are.
	Versions map[string]*schema.Props
	Convert  func(obj map[string]any, apiVersion string) (map[string]any, error)
}

// Manager tracks field ownership for one resource. It is safe for
// concurrent use.
type Manager struct {
	cfg     Config
	gv      fieldpath.APIVersion
	typ     typed.ParseableType
	main    *merge.Updater
	status  *merge.Updater
	stripMe *fieldpath.Set
	now     func() time.Time
	sets    setCache
}

// New returns the Manager of the resource cfg describes.
func New(cfg Config) (*Manager, error) {
	if cfg.APIVersion == "" || cfg.Kind == "" {
		return nil, errors.New("managedfields: APIVersion and Kind are required")
	}
	p := &typed.Parser{Schema: *buildSchema(cfg.Schema)}
	gv := fieldpath.APIVersion(cfg.APIVersion)
	m := &Manager{cfg: cfg, gv: gv, typ: p.Type(rootType), now: time.Now}
	if !m.typ.IsValid() {
		return nil, errors.New("managedfields: the derived schema is not valid")
	}
	var conv merge.Converter = noConversion{}
	if cfg.Convert != nil && len(cfg.Versions) > 0 {
		vc := versionConverter{convert: cfg.Convert, types: map[fieldpath.APIVersion]typed.ParseableType{gv: m.typ}}
		for av, props := range cfg.Versions {
			t := (&typed.Parser{Schema: *buildSchema(props)}).Type(rootType)
			if !t.IsValid() {
				return nil, errors.New("managedfields: the derived schema of " + av + " is not valid")
			}
			vc.types[fieldpath.APIVersion(av)] = t
		}
		conv = vc
	}
	var mainFilter, statusFilter map[fieldpath.APIVersion]fieldpath.Filter
	if cfg.StatusSubresource {
		// Reset fields, at every version.
		mainFilter, statusFilter = map[fieldpath.APIVersion]fieldpath.Filter{}, map[fieldpath.APIVersion]fieldpath.Filter{}
		for _, av := range append([]string{cfg.APIVersion}, slices.Collect(maps.Keys(cfg.Versions))...) {
			mainFilter[fieldpath.APIVersion(av)] = fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("status")))
			statusFilter[fieldpath.APIVersion(av)] = fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("spec")))
		}
	}
	m.main = (&merge.UpdaterBuilder{Converter: conv, IgnoreFilter: mainFilter}).BuildUpdater()
	m.status = (&merge.UpdaterBuilder{Converter: conv, IgnoreFilter: statusFilter}).BuildUpdater()
	m.stripMe = fieldpath.NewSet(
		fieldpath.MakePathOrDie("apiVersion"),
		fieldpath.MakePathOrDie("kind"),
		fieldpath.MakePathOrDie("metadata"),
		fieldpath.MakePathOrDie("metadata", "name"),
		fieldpath.MakePathOrDie("metadata", "namespace"),
		fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
		fieldpath.MakePathOrDie("metadata", "selfLink"),
		fieldpath.MakePathOrDie("metadata", "uid"),
		fieldpath.MakePathOrDie("metadata", "clusterName"),
		fieldpath.MakePathOrDie("metadata", "generation"),
		fieldpath.MakePathOrDie("metadata", "managedFields"),
		fieldpath.MakePathOrDie("metadata", "resourceVersion"),
	)
	return m, nil
}

// versionConverter converts typed values between the versions of a
// resource through Config.Convert.
type versionConverter struct {
	convert func(obj map[string]any, apiVersion string) (map[string]any, error)
	types   map[fieldpath.APIVersion]typed.ParseableType
}

// errMissingVersion is a conversion to a version the resource does not
// have (an entry recorded at a version since removed): structured-merge-diff
// then drops that entry's fields, as kube does.
var errMissingVersion = errors.New("managedfields: no such version")

func (c versionConverter) Convert(v *typed.TypedValue, to fieldpath.APIVersion) (*typed.TypedValue, error) {
	t, ok := c.types[to]
	if !ok {
		return nil, errMissingVersion
	}
	obj, ok := v.AsValue().Unstructured().(map[string]any)
	if !ok {
		return nil, errors.New("managedfields: not an object")
	}
	if av, _ := obj["apiVersion"].(string); av == string(to) {
		return t.FromUnstructured(obj)
	}
	out, err := c.convert(obj, string(to))
	if err != nil {
		return nil, err
	}
	return t.FromUnstructured(smdObject(out))
}

func (c versionConverter) IsMissingVersionError(err error) bool {
	return errors.Is(err, errMissingVersion)
}

// noConversion is the converter of a resource served at one version.
type noConversion struct{}

func (noConversion) Convert(v *typed.TypedValue, _ fieldpath.APIVersion) (*typed.TypedValue, error) {
	return v, nil
}

func (noConversion) IsMissingVersionError(error) bool { return false }

func (m *Manager) updater(subresource string) *merge.Updater {
	if subresource == "status" {
		return m.status
	}
	return m.main
}

// Update records that manager changed live into obj (live nil: obj is
// being created) through subresource ("" or "status"), and sets obj's
// metadata.managedFields, as kube's UpdateNoErrors: on an error obj keeps
// live's entries. obj's own entries are taken as they are when it has some
// (a client may edit them) and it is not a subresource write; a list of one
// empty entry clears them.
func (m *Manager) Update(live, obj map[string]any, manager, subresource string) (err error) {
	defer recovered(&err)
	creating := live == nil
	if creating {
		live = map[string]any{}
	}
	err = m.update(live, obj, manager, subresource, creating)
	if err != nil {
		md, _ := obj["metadata"].(map[string]any)
		lmd, _ := live["metadata"].(map[string]any)
		if md != nil {
			if v, ok := lmd["managedFields"]; ok {
				md["managedFields"] = v
			} else {
				delete(md, "managedFields")
			}
		}
	}
	return err
}

func (m *Manager) update(live, obj map[string]any, manager, subresource string, creating bool) error {
	var mf managed
	var err error
	switch {
	case subresource != "":
		mf = orEmpty(m.sets.decode(live))
	case isReset(obj):
		mf = emptyManaged()
	default:
		mf, err = m.sets.decode(obj)
		if err != nil || len(mf.fields) == 0 {
			mf = orEmpty(m.sets.decode(live))
		}
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
	// An existing object that has no managed fields is not tracked until
	// it is applied to.
	if len(mf.fields) == 0 && !creating {
		return nil
	}
	liveTV := m.storedTyped(live)
	newTV, err := m.typedOf(obj)
	if err != nil {
		return fmt.Errorf("failed to convert new object to smd typed: %w", err)
	}
	if err := m.updateManaged(liveTV, newTV, &mf, manager, subresource); err != nil {
		return err
	}
	return m.sets.encode(obj, mf)
}

// recovered turns a panic of the merge engine into an error: a stored
// object the schema no longer describes must fail one write, not the
// server.
func recovered(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("managedfields: %v", p)
	}
}

func orEmpty(mf managed, err error) managed {
	if err != nil {
		return emptyManaged()
	}
	return mf
}

// updateManaged runs the update half of the chain below the identifier:
// the change from liveTV to newTV goes to manager's Update entry (merged
// with its earlier one, time now), then the cap.
func (m *Manager) updateManaged(liveTV, newTV *typed.TypedValue, mf *managed, manager, subresource string) error {
	_, fields, err := m.updater(subresource).Update(liveTV, newTV, m.gv, mf.fields, currentOperation)
	if err != nil {
		return fmt.Errorf("failed to update ManagedFields: %w", err)
	}
	mf.fields = fields
	m.strip(mf, currentOperation)
	id := m.identifier(manager, meta.ManagedFieldsOperationUpdate, subresource)
	if vs, ok := mf.fields[currentOperation]; ok {
		delete(mf.fields, currentOperation)
		if prev, ok := mf.fields[id]; ok {
			merged := vs.Set().Union(prev.Set())
			if merged.Equals(prev.Set()) {
				merged = prev.Set() // the same set: its printing is cached
			}
			mf.fields[id] = fieldpath.NewVersionedSet(merged, vs.APIVersion(), vs.Applied())
		} else {
			mf.fields[id] = vs
		}
		t := meta.NewTime(m.now().UTC().Truncate(time.Second))
		mf.times[id] = &t
	}
	return m.capUpdateManagers(mf)
}

// identifier is kube's buildManagerInfo: an empty manager is "unknown".
func (m *Manager) identifier(manager, operation, subresource string) string {
	if manager == "" {
		manager = "unknown"
	}
	return identifier(meta.ManagedFieldsEntry{Manager: manager, Operation: operation, APIVersion: m.cfg.APIVersion, Subresource: subresource})
}

// strip removes the server-owned metadata from manager's set, and the
// entry when nothing is left.
func (m *Manager) strip(mf *managed, manager string) {
	vs, ok := mf.fields[manager]
	if !ok {
		return
	}
	s := vs.Set().Difference(m.stripMe)
	if s.Empty() {
		delete(mf.fields, manager)
		return
	}
	mf.fields[manager] = fieldpath.NewVersionedSet(s, vs.APIVersion(), vs.Applied())
}

// capUpdateManagers is kube's capManagersManager: beyond ten Update
// entries, the oldest merge into an "ancient-changes" entry per version.
func (m *Manager) capUpdateManagers(mf *managed) error {
	var updaters []string
	for id, vs := range mf.fields {
		if !vs.Applied() {
			updaters = append(updaters, id)
		}
	}
	if len(updaters) <= maxUpdateManagers {
		return nil
	}
	sort.Slice(updaters, func(i, j int) bool {
		a, b := unixSeconds(mf.times[updaters[i]]), unixSeconds(mf.times[updaters[j]])
		if a != b {
			return a < b
		}
		return updaters[i] < updaters[j]
	})
	first := map[string]string{}
	for i, n := 0, len(updaters); i < len(updaters) && n > maxUpdateManagers; i++ {
		id := updaters[i]
		vs := mf.fields[id]
		t := mf.times[id]
		version := string(vs.APIVersion())
		bucket := identifier(meta.ManagedFieldsEntry{Manager: ancientChanges, Operation: meta.ManagedFieldsOperationUpdate, APIVersion: version})
		f, seen := first[version]
		if !seen {
			first[version] = id
			continue
		}
		if _, ok := mf.fields[bucket]; !ok {
			mf.fields[bucket] = mf.fields[f]
			delete(mf.fields, f)
		}
		mf.fields[bucket] = fieldpath.NewVersionedSet(vs.Set().Union(mf.fields[bucket].Set()), vs.APIVersion(), vs.Applied())
		delete(mf.fields, id)
		n--
		mf.times[bucket] = t
	}
	return nil
}

// typedOf converts a decoded object for structured-merge-diff (numbers as
// int64 or float64, without metadata.managedFields), checking it against
// the schema.
func (m *Manager) typedOf(obj map[string]any) (*typed.TypedValue, error) {
	return m.typ.FromUnstructured(smdObject(obj))
}

// storedTyped is typedOf for a stored object, checked when it was written:
// it is not walked again.
func (m *Manager) storedTyped(obj map[string]any) *typed.TypedValue {
	return typed.AsTypedUnvalidated(value.NewValueInterface(smdObject(obj)), m.typ.Schema, m.typ.TypeRef)
}

// smdObject is smdValue of an object without metadata.managedFields.
func smdObject(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if md, ok := v.(map[string]any); ok && k == "metadata" {
			c := make(map[string]any, len(md))
			for mk, mv := range md {
				if mk != "managedFields" {
					c[mk] = smdValue(mv)
				}
			}
			out[k] = c
			continue
		}
		out[k] = smdValue(v)
	}
	return out
}

func withoutManagedFields(obj map[string]any) map[string]any {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return obj
	}
	if _, has := md["managedFields"]; !has {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	md2 := make(map[string]any, len(md))
	for k, v := range md {
		if k != "managedFields" {
			md2[k] = v
		}
	}
	out["metadata"] = md2
	return out
}

// smdValue copies v with json.Number turned into int64 or float64, the
// numbers structured-merge-diff reads.
func smdValue(v any) any {
	return copyLeaves(v, func(v any) any {
		n, ok := v.(json.Number)
		if !ok {
			return v
		}
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(string(n), 64)
		return f
	})
}

// copyLeaves copies the maps and slices of a decoded JSON value, with each
// other value replaced by leaf's result.
func copyLeaves(v any, leaf func(any) any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyLeaves(e, leaf)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyLeaves(e, leaf)
		}
		return out
	}
	return leaf(v)
}

// ConflictStatus is the 409 kube-apiserver answers for apply conflicts:
// one cause per field, and the message naming each manager.
func conflictStatus(conflicts merge.Conflicts) *meta.Status {
	// structured-merge-diff lists conflicts in map order (kube's causes
	// come in any order); ours are by manager, then field.
	conflicts = slices.Clone(conflicts)
	slices.SortStableFunc(conflicts, func(a, b merge.Conflict) int {
		if c := strings.Compare(a.Manager, b.Manager); c != 0 {
			return c
		}
		return a.Path.Compare(b.Path)
	})
	causes := make([]meta.StatusCause, 0, len(conflicts))
	for _, c := range conflicts {
		causes = append(causes, meta.StatusCause{Type: meta.CauseTypeFieldManagerConflict,
			Message: "conflict with " + printManager(c.Manager), Field: c.Path.String()})
	}
	return &meta.Status{Kind: "Status", APIVersion: "v1", Status: meta.StatusFailure, Code: 409,
		Reason: meta.StatusReasonConflict, Message: conflictMessage(conflicts), Details: &meta.StatusDetails{Causes: causes}}
}

func conflictMessage(conflicts merge.Conflicts) string {
	if len(conflicts) == 1 {
		return fmt.Sprintf("Apply failed with 1 conflict: conflict with %v: %v", printManager(conflicts[0].Manager), conflicts[0].Path)
	}
	byManager := map[string][]fieldpath.Path{}
	for _, c := range conflicts {
		byManager[c.Manager] = append(byManager[c.Manager], c.Path)
	}
	managers := make([]string, 0, len(byManager))
	for k := range byManager {
		managers = append(managers, k)
	}
	sort.Strings(managers)
	var lines []string
	for _, mgr := range managers {
		lines = append(lines, fmt.Sprintf("conflicts with %v:", printManager(mgr)))
		for _, p := range byManager[mgr] {
			lines = append(lines, fmt.Sprintf("- %v", p))
		}
	}
	return fmt.Sprintf("Apply failed with %d conflicts: %s", len(conflicts), strings.Join(lines, "\n"))
}

// printManager words a manager identifier as kube does.
func printManager(id string) string {
	var e meta.ManagedFieldsEntry
	if err := json.Unmarshal([]byte(id), &e); err != nil {
		return strconv.Quote(id)
	}
	s := strconv.Quote(e.Manager)
	if e.Subresource != "" {
		s = fmt.Sprintf("%s with subresource %q", s, e.Subresource)
	}
	if e.Operation == meta.ManagedFieldsOperationUpdate {
		if e.Time == nil {
			return fmt.Sprintf("%s using %v", s, e.APIVersion)
		}
		return fmt.Sprintf("%s using %v at %v", s, e.APIVersion, e.Time.UTC().Format(time.RFC3339))
	}
	return s
}
