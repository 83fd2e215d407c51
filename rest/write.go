// This file holds the write verbs create, update and (with patch.go) patch
// as named steps, with the generic registry's rules (k8s.io/apiserver
// pkg/registry/generic/registry/store.go and pkg/registry/rest); the step
// list is above writeRequest. delete.go holds delete and deletecollection.

package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/annexapi/annex/field"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/internal/attrs"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
	"github.com/annexapi/annex/storage"
)

// generateNameAttempts is how many names a create with generateName tries
// before answering 409, as k8s.io/apiserver does.
const generateNameAttempts = 8

// writeParams are the query parameters of create, update and patch.
type writeParams struct {
	dryRun          bool
	dryRunValues    []string
	fieldManager    string
	fieldValidation string // Strict, Warn or Ignore
	// fieldValidationGiven is the parameter as given ("" when absent): the
	// options admission sees carry it, as kube's do.
	fieldValidationGiven string
	force                *bool
}

// parseWriteParams validates dryRun, fieldManager and fieldValidation; kind
// names the options type in a 422 ("CreateOptions", ...).
func parseWriteParams(q url.Values, kind string) (writeParams, *meta.Status) {
	var p writeParams
	dryRun, st := dryRunParam(q, kind)
	if st != nil {
		return p, st
	}
	p.dryRun, p.dryRunValues = dryRun, q["dryRun"]
	p.fieldManager = q.Get("fieldManager")
	p.fieldValidation = q.Get("fieldValidation")
	p.fieldValidationGiven = p.fieldValidation
	var causes []meta.StatusCause
	if len(p.fieldManager) > meta.FieldManagerMaxLength {
		causes = append(causes, meta.StatusCause{Type: meta.CauseTypeFieldValueTooLong, Field: "fieldManager", Message: "Too long: may not be more than 128 bytes"})
	}
	for i, r := range p.fieldManager {
		if !unicode.IsPrint(r) {
			causes = append(causes, fieldInvalid("fieldManager", p.fieldManager, fmt.Sprintf("invalid character %#U (at position %d)", r, i)))
		}
	}
	switch p.fieldValidation {
	case "":
		p.fieldValidation = fieldValidationWarn
	case fieldValidationIgnore, fieldValidationWarn, fieldValidationStrict:
	default:
		causes = append(causes, fieldNotSupported("fieldValidation", p.fieldValidation, []string{"", fieldValidationIgnore, fieldValidationStrict, fieldValidationWarn}))
	}
	if v, ok := q["force"]; ok {
		b := queryBool(v)
		p.force = &b
	}
	if len(causes) > 0 {
		return p, meta.NewInvalid(meta.GroupKind{Group: "meta.k8s.io", Kind: kind}, "", causes)
	}
	return p, nil
}

// The fieldValidation values.
const (
	fieldValidationIgnore = "Ignore"
	fieldValidationWarn   = "Warn"
	fieldValidationStrict = "Strict"
)

// createOptions, updateOptions and patchOptions are the options admission
// sees for each verb.
// The options of a write, as admission sees them (AdmissionReview's
// request.options): typed, with the parameters as given, as kube's.
func (p writeParams) createOptions() meta.CreateOptions {
	return meta.CreateOptions{TypeMeta: optionsType("CreateOptions"), DryRun: p.dryRunValues, FieldManager: p.fieldManager, FieldValidation: p.fieldValidationGiven}
}

func (p writeParams) updateOptions() meta.UpdateOptions {
	return meta.UpdateOptions{TypeMeta: optionsType("UpdateOptions"), DryRun: p.dryRunValues, FieldManager: p.fieldManager, FieldValidation: p.fieldValidationGiven}
}

func (p writeParams) patchOptions() meta.PatchOptions {
	return meta.PatchOptions{TypeMeta: optionsType("PatchOptions"), DryRun: p.dryRunValues, FieldManager: p.fieldManager, FieldValidation: p.fieldValidationGiven, Force: p.force}
}

func optionsType(kind string) meta.TypeMeta {
	return meta.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: kind}
}

// The write path is a sequence of named steps, in the order
// k8s.io/apiserver runs them:
//
//	decode    options and body, the object decoded once (decode, or
//	          decodePatch and the patch applied in tryUpdate), then checked
//	          against the URL, pruned and defaulted (checkDecoded)
//	carryOver an update only: the resourceVersion precondition
//	          (checkResourceVersion), the server-owned metadata and the
//	          status subresource's rule (keepStatusRule) from the stored object
//	admit     mutating admission (admit)
//	prepare   the registry's rules: prepareCreate, one for a POST and for a
//	          PUT that creates, or prepareUpdate
//	validate  type meta, ObjectMeta and the strategy's checks (validate)
//	admit     validating admission (admit)
//	store     storeCreate, storeUpdate or storeDelete (encode is the one
//	          encode, just before)
//	respond   warnings and the object in the negotiated output (respond)
//
// admitted runs admit, prepare, validate and admit. An update or patch runs
// everything from decode to the encode inside storage's guaranteed update
// (tryUpdate), again on every conflict, so its store step contains the
// others. A delete only decodes its options, admits (validating, on the
// stored object) and stores.

// writeRequest is one create, update, patch or delete going through the
// steps: what the request asked for and what the steps learned.
type writeRequest struct {
	// verb is create, update, patch or delete; it words errors.
	verb string
	// sub is the subresource ("" or "status"); namespace and name come from
	// the URL (a create's name comes from the object).
	sub, namespace, name string
	params               writeParams
	// opts are the options admission sees.
	opts any
	// produce returns an update's or patch's object for the stored state cur
	// (zero when missing); it returns a fresh object every call.
	produce func(cur storage.Object) (Object, *meta.Status)
	// duplicates are the paths of the keys the body has twice, for
	// fieldValidation; patched is a JSON or merge patch's result in the
	// last try (what kube's errors about it quote).
	duplicates []string
	patched    []byte
	// warnings are the unknown-field warnings of the last decode; generated
	// is true when prepareCreate generated the name; created is true when
	// the last try of an update created the object.
	warnings  []string
	generated bool
	created   bool
	// manager is the field manager the write is recorded for; applied is
	// true for a server-side apply, whose produce step records it.
	manager string
	applied bool
	// deletedAs is, when the last try removed the last finalizer of an
	// object being deleted (and so deleted it), the updated object: the
	// answer.
	deletedAs []byte
}

// errorContext is what StatusForError needs to word this write's errors.
func (wr *writeRequest) errorContext() ErrorContext {
	return ErrorContext{Name: wr.name, Verb: wr.verb}
}

// create: decode, admitted (admit, prepare, validate, admit), store,
// respond.
func (rh *resourceHandler) create(w http.ResponseWriter, r *http.Request, o output, namespace string) {
	ctx := r.Context()
	wr := &writeRequest{verb: "create", namespace: namespace}
	_, obj, st := rh.decode(r, wr, "CreateOptions")
	if st == nil {
		st = rh.checkDecoded(obj, wr)
	}
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	wr.opts = wr.params.createOptions()
	wr.manager = managerName(wr.params.fieldManager, r.UserAgent())
	rh.trackUpdate(wr, nil, obj)
	obj, err := rh.admitted(ctx, wr, obj, nil)
	if err != nil {
		rh.fail(w, err, wr.errorContext())
		return
	}
	step := startStorage(ctx)
	data, err := rh.storeCreate(ctx, wr, obj)
	step.storageDone(ctx, err)
	if err != nil {
		rh.fail(w, err, wr.errorContext())
		return
	}
	rh.respond(ctx, w, o, wr, http.StatusCreated, data)
}

// update: decode and check the body against the URL, then store
// (tryUpdate inside storage's guaranteed update), respond.
func (rh *resourceHandler) update(w http.ResponseWriter, r *http.Request, o output, sub, namespace, name string) {
	wr := &writeRequest{verb: "update", sub: sub, namespace: namespace, name: name}
	body, first, st := rh.decode(r, wr, "UpdateOptions")
	if st == nil {
		st = rh.checkUpdateBody(first, wr)
	}
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	wr.opts = wr.params.updateOptions()
	wr.manager = managerName(wr.params.fieldManager, r.UserAgent())
	// Hooks edit the object, and the update may be tried again: the first
	// try takes the object decoded above, every retry decodes afresh.
	wr.produce = func(storage.Object) (Object, *meta.Status) {
		if obj := first; obj != nil {
			first = nil
			return obj, nil
		}
		return rh.decodeObject(body)
	}
	rh.storeAndRespond(w, r, o, wr)
}

// storeAndRespond runs the store step of an update or patch and responds:
// 200, or 201 when a PUT created the object.
func (rh *resourceHandler) storeAndRespond(w http.ResponseWriter, r *http.Request, o output, wr *writeRequest) {
	ctx := r.Context()
	data, ok := rh.storeUpdateStep(w, r, wr)
	if !ok {
		return
	}
	code := http.StatusOK
	if wr.created {
		code = http.StatusCreated
	}
	rh.respond(ctx, w, o, wr, code, data)
}

// storeUpdateStep is the timed store step of an update or patch; on an
// error it answers it and returns false.
func (rh *resourceHandler) storeUpdateStep(w http.ResponseWriter, r *http.Request, wr *writeRequest) ([]byte, bool) {
	ctx := r.Context()
	step := startStorage(ctx)
	data, err := rh.storeUpdate(ctx, wr)
	step.storageDone(ctx, err)
	if err != nil {
		rh.fail(w, err, wr.errorContext())
		return nil, false
	}
	return data, true
}

// decode is the first step of a create or update: its options (optionsKind
// names them in errors), the body, and the body decoded into an object.
func (rh *resourceHandler) decode(r *http.Request, wr *writeRequest, optionsKind string) ([]byte, Object, *meta.Status) {
	p, st := parseWriteParams(r.URL.Query(), optionsKind)
	if st != nil {
		return nil, nil, st
	}
	wr.params = p
	body, st := readBody(r)
	if st != nil {
		return nil, nil, st
	}
	obj, dups, st := rh.decodeObjectDup(body)
	wr.duplicates = dups
	return body, obj, st
}

// checkUpdateBody is the update handler's check of the decoded body against
// the URL, made once before the first try: name, namespace, apiVersion and a
// well-formed resourceVersion.
func (rh *resourceHandler) checkUpdateBody(obj Object, wr *writeRequest) *meta.Status {
	md := metadata(obj)
	if objName := str(md, "name"); objName != wr.name {
		return meta.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", objName, wr.name))
	}
	if objNS := str(md, "namespace"); wr.namespace != "" && objNS != "" && objNS != wr.namespace {
		return meta.NewBadRequest(fmt.Sprintf("the namespace of the object (%s) does not match the namespace on the request (%s)", objNS, wr.namespace))
	}
	if st := rh.checkAPIVersion(obj); st != nil {
		return st
	}
	if newRV := str(md, "resourceVersion"); newRV != "" {
		if _, err := strconv.ParseUint(newRV, 10, 64); err != nil {
			return meta.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
		}
	}
	return nil
}

// checkDecoded ends the decode step of every try: the object keeps the URL's
// name (update and patch), its apiVersion is this one, the schema prunes
// (Strict: 400) and defaults it, and its namespace is the request's.
func (rh *resourceHandler) checkDecoded(obj Object, wr *writeRequest) *meta.Status {
	md := metadata(obj)
	if objName := str(md, "name"); wr.name != "" && objName != wr.name {
		return meta.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", objName, wr.name))
	}
	if st := rh.checkAPIVersion(obj); st != nil {
		return st
	}
	warnings, st := rh.pruneAndDefault(obj, wr.params, wr.duplicates, wr.verb != "patch")
	if st != nil && wr.patched != nil {
		st = patchInvalid(wr.patched, st.Message)
	}
	if st != nil {
		return st
	}
	wr.warnings = warnings
	return rh.ensureNamespace(md, wr.namespace)
}

// pruneAndDefault applies the schema to a decoded object: unknown fields are
// removed and, per fieldValidation, rejected (Strict, 400 with k8s's strict
// decoding error) or returned as warnings (Warn); then the nulls of fields
// that are neither nullable nor defaulted are dropped and defaults are
// filled (a null with a default takes the default).
// prefix, when true, words the error as the create and update decoders do.
func (rh *resourceHandler) pruneAndDefault(obj Object, p writeParams, duplicates []string, prefix bool) (warnings []string, st *meta.Status) {
	var pruned []string
	if rh.Schema != nil {
		pruned = schema.Prune(rh.Schema, obj)
	}
	if len(pruned)+len(duplicates) > 0 {
		msgs := make([]string, 0, len(pruned)+len(duplicates))
		for _, f := range duplicates {
			msgs = append(msgs, "duplicate field "+strconv.Quote(f))
		}
		for _, f := range pruned {
			msgs = append(msgs, "unknown field "+strconv.Quote(f))
		}
		switch p.fieldValidation {
		case fieldValidationStrict:
			msg := "strict decoding error: " + strings.Join(msgs, ", ")
			if prefix {
				msg = fmt.Sprintf("%s in version %q cannot be handled as a %s: %s", rh.Kind, rh.Version, rh.Kind, msg)
			}
			return nil, meta.NewBadRequest(msg)
		case fieldValidationWarn:
			warnings = msgs
		}
	}
	if rh.Schema != nil {
		schema.PruneNulls(rh.Schema, obj)
		schema.Default(rh.Schema, obj)
	}
	return warnings, nil
}

// checkAPIVersion answers 400 when the body's apiVersion is another one.
func (rh *resourceHandler) checkAPIVersion(obj Object) *meta.Status {
	av, _ := obj["apiVersion"].(string)
	if av != "" && av != rh.apiVersion {
		return meta.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", av, rh.apiVersion))
	}
	return nil
}

// ensureNamespace fills an empty namespace from the request, clears it for a
// cluster-scoped resource, and rejects a different one
// (EnsureObjectNamespaceMatchesRequestNamespace).
func (rh *resourceHandler) ensureNamespace(md Object, namespace string) *meta.Status {
	ns := str(md, "namespace")
	switch {
	case !rh.Namespaced:
		delete(md, "namespace")
	case ns == "":
		md["namespace"] = namespace
	case ns != namespace:
		return meta.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// tryUpdate is one try of an update or patch, called by storage's guaranteed
// update with the stored state (again on every conflict): decode, then,
// when the object is missing, create's steps, else carryOver and update's
// steps; it returns the bytes to store.
func (rh *resourceHandler) tryUpdate(ctx context.Context, wr *writeRequest, cur storage.Object) ([]byte, error) {
	wr.created, wr.warnings, wr.deletedAs = false, nil, nil
	if cur.Data == nil && ((wr.verb == "patch" && !wr.applied) || wr.sub != "") {
		return nil, meta.NewNotFound(rh.gr, wr.name)
	}
	// The update sees the stored object at the request's version.
	var err error
	if cur.Data, err = rh.asServedObject(ctx, &cur); err != nil {
		return nil, err
	}
	obj, st := wr.produce(cur)
	if st == nil {
		st = rh.checkDecoded(obj, wr)
	}
	if st != nil {
		return nil, st
	}
	var old Object
	if cur.Data == nil {
		wr.created = true
		// A PUT that creates ignores the body's resourceVersion, as
		// storage's update does.
		delete(metadata(obj), "resourceVersion")
		rh.trackUpdate(wr, nil, obj)
	} else {
		if old, st = rh.decodeObject(cur.Data); st != nil {
			return nil, meta.NewInternalError(errors.New(st.Message))
		}
		if obj, st = rh.carryOver(wr, obj, old, cur.ResourceVersion); st != nil {
			return nil, st
		}
	}
	obj, err = rh.admitted(ctx, wr, obj, old)
	if err != nil {
		return nil, err
	}
	finalizedNow := old != nil && finalized(obj)
	if finalizedNow {
		delete(metadata(obj), "finalizers") // [] or null: the answer has none, as kube's
	}
	if !wr.params.dryRun { // a dry run answers at the request's version
		if obj, err = rh.toStorage(ctx, obj); err != nil {
			return nil, err
		}
	}
	data, err := rh.encode(obj)
	if err != nil {
		return nil, err
	}
	if finalizedNow {
		// Being deleted, and the update took away the last finalizer: the
		// object goes now, in this write, and the answer is the updated
		// object, as kube-apiserver's (a dry run only answers it).
		wr.deletedAs = data
		if wr.params.dryRun {
			return data, nil
		}
		return nil, storage.ErrDeleteInstead
	}
	return data, nil
}

// finalized says whether obj is being deleted and no finalizer holds it.
func finalized(obj Object) bool {
	md := metadata(obj)
	if ts, ok := md["deletionTimestamp"]; !ok || ts == nil {
		return false
	}
	l, _ := md["finalizers"].([]any)
	return len(l) == 0
}

// carryOver is what an update takes from the stored object old (at
// revision rev) before admission sees the new one: the resourceVersion
// precondition, the server-owned metadata, and the status rule. It returns
// the object to go on with.
func (rh *resourceHandler) carryOver(wr *writeRequest, obj, old Object, rev uint64) (Object, *meta.Status) {
	md := metadata(obj)
	curRV := strconv.FormatUint(rev, 10)
	if st := rh.checkResourceVersion(wr, str(md, "resourceVersion"), curRV); st != nil {
		return nil, st
	}
	oldMD := metadata(old)
	md["resourceVersion"] = curRV
	for _, k := range []string{"uid", "creationTimestamp", "generation"} {
		if v, ok := oldMD[k]; ok {
			md[k] = v
		} else {
			delete(md, k)
		}
	}
	// As kube's rest.BeforeUpdate: an object being deleted keeps its
	// deletionTimestamp whatever the update says, and its grace period when
	// the update leaves it out; on an object not being deleted, setting them
	// is refused by the validation ("field is immutable").
	if v, ok := oldMD["deletionTimestamp"]; ok && v != nil {
		md["deletionTimestamp"] = v
	}
	if v, ok := oldMD["deletionGracePeriodSeconds"]; ok && v != nil {
		if nv, has := md["deletionGracePeriodSeconds"]; !has || nv == nil {
			md["deletionGracePeriodSeconds"] = v
		}
	}
	delete(md, "selfLink")
	rh.trackUpdate(wr, old, obj)
	return rh.keepStatusRule(wr, obj, old), nil
}

// checkResourceVersion is an update's optimistic-concurrency precondition:
// the body's resourceVersion must be the stored one (a patch without one
// means the current one); none at all is a 422 unless the strategy allows
// unconditional updates.
func (rh *resourceHandler) checkResourceVersion(wr *writeRequest, newRV, curRV string) *meta.Status {
	if wr.verb == "patch" && newRV == "" {
		newRV = curRV
	}
	switch {
	case newRV == "" && !rh.Strategy.AllowUnconditionalUpdate:
		// kube-apiserver's store names the qualified resource here, in the
		// place of the kind (environments.platform.example.com).
		return meta.NewInvalid(meta.GroupKind{Group: rh.Group, Kind: rh.Plural}, wr.name, []meta.StatusCause{
			fieldInvalid("metadata.resourceVersion", uint64(0), "must be specified for an update")})
	case newRV != "" && newRV != curRV:
		return meta.NewConflict(rh.gr, wr.name, meta.OptimisticLockErrorMsg)
	}
	return nil
}

// keepStatusRule applies the status subresource: <plural>/status changes
// only .status (the result is a copy of old with the new status: old stays
// what hooks and admission see as the old object), the main resource
// changes anything but .status. Without the subresource obj is unchanged.
func (rh *resourceHandler) keepStatusRule(wr *writeRequest, obj, old Object) Object {
	if !rh.StatusSubresource {
		return obj
	}
	from := old
	if wr.sub == "status" {
		from = obj
		obj = deepCopyJSON(old).(Object)
		// The status write's managedFields stay (kube's status strategy).
		if mf, ok := metadata(from)["managedFields"]; ok {
			metadata(obj)["managedFields"] = mf
		} else {
			delete(metadata(obj), "managedFields")
		}
	}
	if status, has := from["status"]; has {
		obj["status"] = status
	} else {
		delete(obj, "status")
	}
	return obj
}

// admitted runs the steps every create and update of an object shares, in
// Kubernetes' order: admit (mutating), prepare (prepareCreate when old is
// nil, else prepareUpdate), validate, admit (validating). It returns the
// object to store.
func (rh *resourceHandler) admitted(ctx context.Context, wr *writeRequest, obj, old Object) (Object, error) {
	op := attrs.Update
	if old == nil {
		op = attrs.Create
	}
	a := rh.attributes(ctx, op, wr, obj, old)
	if a.Name == "" {
		a.Name = str(metadata(obj), "name")
	}
	if err := rh.admit(ctx, mutating, a); err != nil {
		return nil, err
	}
	obj = a.Object
	if old == nil {
		rh.prepareCreate(ctx, wr, obj)
	} else {
		rh.prepareUpdate(ctx, wr, obj, old)
	}
	if st := rh.validate(ctx, wr, a, obj, old); st != nil {
		return nil, st
	}
	wr.warnings = append(wr.warnings, finalizerWarnings(obj, old)...)
	if wr.name == "" {
		a.Name = str(metadata(obj), "name")
	}
	if err := rh.admit(ctx, validating, a); err != nil {
		return nil, err
	}
	return obj, nil
}

// standardFinalizers are kube's own finalizers, which need no domain.
var standardFinalizers = []string{"orphan", "foregroundDeletion", "kubernetes"}

// finalizerWarnings are kube's warnings (WarningsOnCreate and
// WarningsOnUpdate of a custom resource) for the finalizers obj adds to old
// (nil on create): a name that is not a qualified name, and one without a
// domain and path.
func finalizerWarnings(obj, old Object) []string {
	have := map[string]bool{}
	if old != nil {
		for _, f := range stringList(metadata(old)["finalizers"]) {
			have[f] = true
		}
	}
	var added []string
	for _, f := range stringList(metadata(obj)["finalizers"]) {
		if !have[f] {
			have[f] = true
			added = append(added, f)
		}
	}
	slices.Sort(added)
	var out []string
	for _, f := range added {
		for _, msg := range meta.IsQualifiedName(f) {
			out = append(out, fmt.Sprintf("metadata.finalizers: %q: %s", f, msg))
		}
		if !strings.Contains(f, "/") && !slices.Contains(standardFinalizers, f) {
			if strings.Contains(f, ".") {
				out = append(out, fmt.Sprintf("metadata.finalizers: %q: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers", f))
			} else {
				out = append(out, fmt.Sprintf("metadata.finalizers: %q: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers", f))
			}
		}
	}
	return out
}

// stringList is a JSON list's strings.
func stringList(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// prepareCreate applies the registry's create rules, for a POST and for a
// PUT that creates alike (k8s.io/apiserver's Store.Create with
// rest.FillObjectMetaSystemFields and rest.BeforeCreate, and a custom
// resource's PrepareForCreate): a name generated from generateName when
// there is none, a new uid and creationTimestamp, no deletion fields,
// selfLink or managedFields, generation 1, no .status when status is a
// subresource, then the strategy's hook.
func (rh *resourceHandler) prepareCreate(ctx context.Context, wr *writeRequest, obj Object) {
	md := metadata(obj)
	if str(md, "name") == "" && str(md, "generateName") != "" {
		md["name"] = meta.GenerateName(str(md, "generateName"), nil)
		wr.generated = true
	}
	md["uid"] = storage.NewUID()
	md["creationTimestamp"] = time.Now().UTC().Format(time.RFC3339)
	for _, k := range []string{"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		delete(md, k)
	}
	md["generation"] = 1
	if rh.StatusSubresource {
		delete(obj, "status")
	}
	if f := rh.Strategy.PrepareForCreate; f != nil {
		f(ctx, obj)
	}
}

// prepareUpdate applies the registry's update rules after mutating
// admission: the strategy's hook (not on a subresource), then
// metadata.generation one above the stored one when anything but metadata
// (and status, when a subresource) changed.
func (rh *resourceHandler) prepareUpdate(ctx context.Context, wr *writeRequest, obj, old Object) {
	if f := rh.Strategy.PrepareForUpdate; f != nil && wr.sub != "status" {
		f(ctx, obj, old)
	}
	if rh.specChanged(obj, old) {
		metadata(obj)["generation"] = generation(metadata(old)) + 1
	}
}

// specChanged reports whether anything outside metadata, apiVersion and
// kind (and status, when it is a subresource) differs between the decoded
// objects: what bumps metadata.generation. It compares values as their JSON
// would (jsonEqual), without encoding them.
func (rh *resourceHandler) specChanged(obj, old Object) bool {
	ignored := func(k string) bool {
		return k == "metadata" || k == "apiVersion" || k == "kind" || (k == "status" && rh.StatusSubresource)
	}
	n := 0
	for k, v := range obj {
		if ignored(k) {
			continue
		}
		n++
		ov, ok := old[k]
		if !ok || !rh.jsonEqual(v, ov) {
			return true
		}
	}
	for k := range old {
		if !ignored(k) {
			n--
		}
	}
	return n != 0
}

// typeMetaCauses checks kind and fills apiVersion and kind when empty; a
// different kind is a cause, as the CRD validator's ValidateTypeMeta gives.
func (rh *resourceHandler) typeMetaCauses(obj Object) []meta.StatusCause {
	if kind, _ := obj["kind"].(string); kind != "" && kind != rh.Kind {
		return []meta.StatusCause{fieldInvalid("kind", kind, "must be "+rh.Kind)}
	}
	obj["kind"] = rh.Kind
	obj["apiVersion"] = rh.apiVersion
	return nil
}

// validate checks a prepared object, old nil for a create, in the order of
// kube's custom resource strategy: kind (alone when wrong), ObjectMeta
// (ValidateObjectMeta, or ValidateObjectMetaUpdate against old), the scale
// subresource's replicas paths, the schema and its rules (SchemaChecker),
// then the strategy's ValidateCreate, ValidateUpdate or
// ValidateStatusUpdate (less any cause already listed); any cause is a 422
// listing them all.
func (rh *resourceHandler) validate(ctx context.Context, wr *writeRequest, a *attrs.Admission, obj, old Object) *meta.Status {
	md := metadata(obj)
	name := wr.name
	if name == "" {
		name = str(md, "name")
	}
	if causes := rh.typeMetaCauses(obj); len(causes) > 0 {
		return meta.NewInvalid(rh.gk, name, causes)
	}
	om, st := rh.objectMeta(md)
	if st != nil {
		return st
	}
	var causes []meta.StatusCause
	if old == nil {
		causes = meta.ValidateObjectMeta(om, rh.Namespaced, nil)
	} else {
		oldOM, st := rh.objectMeta(metadata(old))
		if st != nil {
			return st
		}
		causes = meta.ValidateObjectMetaUpdate(om, oldOM)
	}
	causes = append(causes, rh.scaleCauses(obj, wr.sub)...)
	if sc, ok := rh.h.admission.(SchemaChecker); ok {
		// a.Object and a.OldObject are obj and old (admitted's). The
		// object's own schema for the scale subresource too (kube validates
		// a scale write as an update of the object): a copy only then.
		sa := a
		if a.Subresource == "scale" {
			cp := *a
			cp.Subresource = ""
			sa = &cp
		}
		causes = append(causes, sc.CheckSchema(ctx, sa, causes)...)
	}
	var strategy field.ErrorList
	switch {
	case old == nil:
		if f := rh.Strategy.ValidateCreate; f != nil {
			strategy = f(ctx, obj)
		}
	case wr.sub == "status":
		if f := rh.Strategy.ValidateStatusUpdate; f != nil {
			strategy = f(ctx, obj, old)
		}
	default:
		if f := rh.Strategy.ValidateUpdate; f != nil {
			strategy = f(ctx, obj, old)
		}
	}
	causes = appendNew(causes, strategy.Causes())
	if len(causes) > 0 {
		return meta.NewInvalid(rh.gk, name, causes)
	}
	return nil
}

// appendNew appends to causes those of more that are not already there
// (same type, field and message): a strategy that checks what the schema
// checks (package typed's decoding into a Go type, say) does not repeat
// the schema's cause.
func appendNew(causes, more []meta.StatusCause) []meta.StatusCause {
	for _, c := range more {
		if !slices.Contains(causes, c) {
			causes = append(causes, c)
		}
	}
	return causes
}

// objectMeta converts generic metadata to meta.ObjectMeta for validation:
// directly when every field has the type JSON decoding gives it (the usual
// case), else through a JSON round trip, whose error is the 400 k8s's
// decoder gives for a malformed field.
func (rh *resourceHandler) objectMeta(md Object) (*meta.ObjectMeta, *meta.Status) {
	if om, ok := objectMetaOf(md); ok {
		// Entries kept as bytes were written by the field manager (or are
		// the stored ones) when it is on; without it they are the
		// client's, and are checked.
		if raw, isRaw := md["managedFields"].(json.RawMessage); isRaw && rh.fields == nil {
			if err := json.Unmarshal(raw, &om.ManagedFields); err != nil {
				return nil, meta.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", rh.Kind, rh.Version, rh.Kind, err))
			}
		}
		return om, nil
	}
	rh.h.jsonPass(2)
	b, err := json.Marshal(md)
	if err != nil {
		return nil, meta.NewInternalError(err)
	}
	var om meta.ObjectMeta
	if err := json.Unmarshal(b, &om); err != nil {
		return nil, meta.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", rh.Kind, rh.Version, rh.Kind, err))
	}
	return &om, nil
}

// encode is the one encode of a write: the object to store, or, on a dry
// run, to answer. An object larger than the storage accepts
// (storage.ObjectSizeLimiter) is a 413 here, before storage is called, a
// dry run included: it answers what the write would.
func (rh *resourceHandler) encode(obj Object) ([]byte, error) {
	rh.h.jsonPass(1)
	data, err := marshalObject(obj)
	if err != nil {
		return nil, err
	}
	if l, ok := rh.Storage.(storage.ObjectSizeLimiter); ok {
		if limit := l.MaxObjectSize(); limit > 0 && len(data) > limit {
			return nil, meta.NewRequestEntityTooLarge(fmt.Sprintf("the object is %d bytes, limit is %d", len(data), limit))
		}
	}
	return data, nil
}

// storeCreate is the store step of a create: it stores obj and returns the
// stored bytes; a generated name that is taken is generated again, up to
// generateNameAttempts times. A dry run stores nothing: it answers 409 when
// the name is taken, else obj, with no resourceVersion, as k8s.io/apiserver's
// dry-run storage does.
func (rh *resourceHandler) storeCreate(ctx context.Context, wr *writeRequest, obj Object) ([]byte, error) {
	md := metadata(obj)
	wr.name = str(md, "name")
	if wr.params.dryRun {
		_, err := rh.Storage.Get(ctx, rh.key(str(md, "namespace"), wr.name), storage.GetOptions{})
		switch {
		case err == nil:
			return nil, meta.NewAlreadyExists(rh.gr, wr.name)
		case !errors.Is(err, storage.ErrNotFound):
			return nil, err
		}
		return rh.encode(obj)
	}
	obj, err := rh.toStorage(ctx, obj)
	if err != nil {
		return nil, err
	}
	md = metadata(obj)
	for attempt := 1; ; attempt++ {
		data, err := rh.encode(obj)
		if err != nil {
			return nil, err
		}
		created, err := rh.Storage.Create(ctx, rh.key(str(md, "namespace"), wr.name), data)
		if err == nil {
			return created.Data, nil
		}
		if !wr.generated || !errors.Is(err, storage.ErrAlreadyExists) {
			return nil, err
		}
		if attempt == generateNameAttempts {
			return nil, meta.NewGenerateNameConflict(rh.gr, wr.name, 1)
		}
		wr.name = meta.GenerateName(str(md, "generateName"), nil)
		md["name"] = wr.name
	}
}

// storeUpdate is the store step of an update or patch: storage's guaranteed
// update calls tryUpdate until a try stores without a conflict (a PUT may
// create the object when the strategy allows it). A dry run reads the
// stored object and tries once, storing nothing. It returns the bytes the
// response shows.
func (rh *resourceHandler) storeUpdate(ctx context.Context, wr *writeRequest) ([]byte, error) {
	key := rh.key(wr.namespace, wr.name)
	// A server-side apply creates a missing object (kube's patcher forces
	// it); subresources never create.
	allowCreate := wr.sub == "" && ((rh.Strategy.AllowCreateOnUpdate && wr.verb == "update") || wr.applied)
	try := func(cur storage.Object) ([]byte, error) { return rh.tryUpdate(ctx, wr, cur) }
	if wr.params.dryRun {
		cur, err := rh.Storage.Get(ctx, key, storage.GetOptions{})
		if err != nil && !(errors.Is(err, storage.ErrNotFound) && allowCreate) {
			return nil, err
		}
		return try(cur)
	}
	res, err := rh.Storage.Update(ctx, key, storage.UpdateOptions{IgnoreNotFound: allowCreate}, try)
	if err != nil {
		return nil, err
	}
	if wr.deletedAs != nil { // the last try deleted the object instead
		return wr.deletedAs, nil
	}
	return res.Data, nil
}

// respond is the last step of a write: the warnings of its decode, then the
// object in the negotiated output.
func (rh *resourceHandler) respond(ctx context.Context, w http.ResponseWriter, o output, wr *writeRequest, code int, data []byte) {
	for _, msg := range wr.warnings {
		filters.AddWarning(ctx, msg)
	}
	rh.writeOne(ctx, w, o, code, data)
}
