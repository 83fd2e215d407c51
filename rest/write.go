// This file holds the write verbs: create, update, delete and
// deletecollection, with the generic registry's rules (k8s.io/apiserver
// pkg/registry/generic/registry/store.go and pkg/registry/rest).

package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/annexapi/annex/filters"
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
	force           *bool
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
	var causes []meta.StatusCause
	if len(p.fieldManager) > 128 {
		causes = append(causes, meta.StatusCause{Type: meta.CauseTypeFieldValueTooLong, Field: "fieldManager", Message: "Too long: may not be more than 128 bytes"})
	}
	switch p.fieldValidation {
	case "":
		p.fieldValidation = fieldValidationWarn
	case fieldValidationIgnore, fieldValidationWarn, fieldValidationStrict:
	default:
		causes = append(causes, fieldNotSupported("fieldValidation", p.fieldValidation, []string{"", fieldValidationIgnore, fieldValidationWarn, fieldValidationStrict}))
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

// pruneAndDefault applies the schema to a decoded object: unknown fields are
// removed and, per fieldValidation, rejected (Strict, 400 with k8s's strict
// decoding error) or returned as warnings (Warn); then defaults are filled.
// prefix, when true, words the error as the create and update decoders do.
func (rh *resourceHandler) pruneAndDefault(obj Object, p writeParams, prefix bool) (warnings []string, st *meta.Status) {
	if rh.Schema == nil {
		return nil, nil
	}
	pruned := schema.Prune(rh.Schema, obj)
	if len(pruned) > 0 {
		msgs := make([]string, len(pruned))
		for i, f := range pruned {
			msgs[i] = "unknown field " + strconv.Quote(f)
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
	schema.Default(rh.Schema, obj)
	return warnings, nil
}

// objectMeta converts generic metadata to meta.ObjectMeta for validation.
func (rh *resourceHandler) objectMeta(md Object) (*meta.ObjectMeta, *meta.Status) {
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

func addWarnings(ctx context.Context, warnings []string) {
	for _, w := range warnings {
		filters.AddWarning(ctx, w)
	}
}

// readWrite reads what every write with a body starts from: its options
// (optionsKind names them in errors), the body, and the body decoded into an
// object.
func (rh *resourceHandler) readWrite(r *http.Request, optionsKind string) (writeParams, []byte, Object, *meta.Status) {
	p, st := parseWriteParams(r.URL.Query(), optionsKind)
	if st != nil {
		return p, nil, nil, st
	}
	body, st := readBody(r)
	if st != nil {
		return p, nil, nil, st
	}
	obj, st := rh.decodeObject(body)
	return p, body, obj, st
}

func (rh *resourceHandler) create(w http.ResponseWriter, r *http.Request, o output, namespace string) {
	ctx := r.Context()
	p, _, obj, st := rh.readWrite(r, "CreateOptions")
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	if st := rh.checkAPIVersion(obj); st != nil {
		filters.WriteStatus(w, st)
		return
	}
	warnings, st := rh.pruneAndDefault(obj, p, true)
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	md := metadata(obj)
	// BeforeCreate: the object's namespace must be the request's.
	if st := rh.ensureNamespace(md, namespace); st != nil {
		filters.WriteStatus(w, st)
		return
	}
	opts := meta.CreateOptions{DryRun: p.dryRunValues, FieldManager: p.fieldManager, FieldValidation: p.fieldValidation}
	attrs := rh.attributes(ctx, OperationCreate, "", str(md, "namespace"), str(md, "name"), obj, nil, p.dryRun, opts)
	if err := rh.mutate(ctx, attrs); err != nil {
		rh.fail(w, err, ErrorContext{Verb: "create"})
		return
	}
	obj = attrs.Object
	md = metadata(obj)
	generated := false
	if str(md, "name") == "" && str(md, "generateName") != "" {
		md["name"] = meta.GenerateName(str(md, "generateName"), nil)
		generated = true
	}
	// Server-owned fields: storage sets uid and creationTimestamp when absent.
	for _, k := range []string{"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "managedFields"} {
		delete(md, k)
	}
	md["generation"] = 1
	if rh.StatusSubresource {
		delete(obj, "status")
	}
	if f := rh.Strategy.PrepareForCreate; f != nil {
		f(ctx, obj)
	}
	if st := rh.validateCreate(ctx, obj); st != nil {
		filters.WriteStatus(w, st)
		return
	}
	attrs.Name = str(md, "name")
	if err := rh.validateAdmission(ctx, attrs); err != nil {
		rh.fail(w, err, ErrorContext{Verb: "create"})
		return
	}
	if p.dryRun {
		addWarnings(ctx, warnings)
		rh.dryRunCreate(w, r, o, obj)
		return
	}
	for attempt := 1; ; attempt++ {
		rh.h.jsonPass(1)
		data, err := json.Marshal(obj)
		if err != nil {
			rh.fail(w, err, ErrorContext{Verb: "create"})
			return
		}
		name := str(md, "name")
		created, err := rh.Storage.Create(ctx, rh.key(str(md, "namespace"), name), data)
		if err == nil {
			addWarnings(ctx, warnings)
			rh.writeOne(w, o, http.StatusCreated, created.Data)
			return
		}
		if generated && errors.Is(err, storage.ErrAlreadyExists) {
			if attempt < generateNameAttempts {
				md["name"] = meta.GenerateName(str(md, "generateName"), nil)
				continue
			}
			filters.WriteStatus(w, meta.NewGenerateNameConflict(rh.gr, name, 1))
			return
		}
		rh.fail(w, err, ErrorContext{Name: name, Verb: "create"})
		return
	}
}

// dryRunCreate answers what a create would have stored: 409 when the name is
// taken, else the object with uid and creationTimestamp filled in and no
// resourceVersion, as k8s.io/apiserver's dry-run storage does.
func (rh *resourceHandler) dryRunCreate(w http.ResponseWriter, r *http.Request, o output, obj Object) {
	md := metadata(obj)
	name := str(md, "name")
	_, err := rh.Storage.Get(r.Context(), rh.key(str(md, "namespace"), name), storage.GetOptions{})
	switch {
	case err == nil:
		filters.WriteStatus(w, meta.NewAlreadyExists(rh.gr, name))
		return
	case !errors.Is(err, storage.ErrNotFound):
		rh.fail(w, err, ErrorContext{Name: name, Verb: "create"})
		return
	}
	md["uid"] = storage.NewUID()
	md["creationTimestamp"] = time.Now().UTC().Format(time.RFC3339)
	rh.h.jsonPass(1)
	data, err := json.Marshal(obj)
	if err != nil {
		rh.fail(w, err, ErrorContext{Verb: "create"})
		return
	}
	rh.writeOne(w, o, http.StatusCreated, data)
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

func (rh *resourceHandler) validateCreate(ctx context.Context, obj Object) *meta.Status {
	md := metadata(obj)
	causes := rh.typeMetaCauses(obj)
	if len(causes) == 0 {
		om, st := rh.objectMeta(md)
		if st != nil {
			return st
		}
		causes = meta.ValidateObjectMeta(om, rh.Namespaced, nil)
		if f := rh.Strategy.ValidateCreate; f != nil {
			causes = append(causes, f(ctx, obj)...)
		}
	}
	if len(causes) > 0 {
		return meta.NewInvalid(rh.gk, str(md, "name"), causes)
	}
	return nil
}

func (rh *resourceHandler) update(w http.ResponseWriter, r *http.Request, o output, sub, namespace, name string) {
	p, body, first, st := rh.readWrite(r, "UpdateOptions")
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	// checkName of the update handler.
	md := metadata(first)
	if objName := str(md, "name"); objName != name {
		filters.WriteStatus(w, meta.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", objName, name)))
		return
	}
	if objNS := str(md, "namespace"); namespace != "" && objNS != "" && objNS != namespace {
		filters.WriteStatus(w, meta.NewBadRequest(fmt.Sprintf("the namespace of the object (%s) does not match the namespace on the request (%s)", objNS, namespace)))
		return
	}
	if st := rh.checkAPIVersion(first); st != nil {
		filters.WriteStatus(w, st)
		return
	}
	if newRV := str(md, "resourceVersion"); newRV != "" {
		if _, err := strconv.ParseUint(newRV, 10, 64); err != nil {
			filters.WriteStatus(w, meta.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err)))
			return
		}
	}
	// Hooks edit the object, and the update may be tried again: the first
	// try takes the object decoded above, every retry decodes afresh.
	produce := func(storage.Object) (Object, *meta.Status) {
		if obj := first; obj != nil {
			first = nil
			return obj, nil
		}
		return rh.decodeObject(body)
	}
	opts := meta.UpdateOptions{DryRun: p.dryRunValues, FieldManager: p.fieldManager, FieldValidation: p.fieldValidation}
	rh.writeUpdate(w, r, o, updateRequest{sub: sub, namespace: namespace, name: name, params: p, opts: opts, produce: produce, verb: "update"})
}

// updateRequest is one update or patch.
type updateRequest struct {
	sub, namespace, name string
	params               writeParams
	opts                 any
	// produce returns the new object given the current state (a zero
	// Object when missing); it must return a fresh object every call.
	produce func(cur storage.Object) (Object, *meta.Status)
	// patch is true for a patch: a missing resourceVersion means the current
	// one, and a missing object is 404.
	patch bool
	verb  string
}

// writeUpdate runs an update or patch through storage's guaranteed update,
// each try doing: produce, prune and default, registry rules, mutating
// admission, strategy hooks and validation, validating admission.
func (rh *resourceHandler) writeUpdate(w http.ResponseWriter, r *http.Request, o output, u updateRequest) {
	ctx := r.Context()
	created := false
	var warnings []string
	tryUpdate := func(cur storage.Object) ([]byte, error) {
		created, warnings = false, nil
		if cur.Data == nil && (u.patch || u.sub != "") {
			return nil, meta.NewNotFound(rh.gr, u.name)
		}
		obj, st := u.produce(cur)
		if st != nil {
			return nil, st
		}
		md := metadata(obj)
		if objName := str(md, "name"); u.patch && objName != u.name {
			return nil, meta.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", objName, u.name))
		}
		if st := rh.checkAPIVersion(obj); st != nil {
			return nil, st
		}
		if st := rh.ensureNamespace(md, u.namespace); st != nil {
			return nil, st
		}
		if warnings, st = rh.pruneAndDefault(obj, u.params, !u.patch); st != nil {
			return nil, st
		}
		if cur.Data == nil {
			created = true
			return rh.createOnUpdate(ctx, obj, u)
		}
		old, st := rh.decodeObject(cur.Data)
		if st != nil {
			return nil, meta.NewInternalError(errors.New(st.Message))
		}
		curRV := strconv.FormatUint(cur.ResourceVersion, 10)
		newRV := str(md, "resourceVersion")
		if u.patch && newRV == "" {
			newRV = curRV
		}
		switch {
		case newRV == "" && !rh.Strategy.AllowUnconditionalUpdate:
			return nil, meta.NewInvalid(rh.gk, u.name, []meta.StatusCause{
				fieldInvalid("metadata.resourceVersion", uint64(0), "must be specified for an update")})
		case newRV != "" && newRV != curRV:
			return nil, meta.NewConflict(rh.gr, u.name, meta.OptimisticLockErrorMsg)
		}
		oldMD := metadata(old)
		md["resourceVersion"] = curRV
		for _, k := range []string{"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"} {
			if v, ok := oldMD[k]; ok {
				md[k] = v
			} else {
				delete(md, k)
			}
		}
		delete(md, "selfLink")
		if rh.StatusSubresource {
			if u.sub == "status" {
				// Only .status changes through the status subresource.
				status, has := obj["status"]
				obj, _ = rh.decodeObject(cur.Data)
				if has {
					obj["status"] = status
				} else {
					delete(obj, "status")
				}
				md = metadata(obj)
			} else if status, has := old["status"]; has {
				obj["status"] = status
			} else {
				delete(obj, "status")
			}
		}
		attrs := rh.attributes(ctx, OperationUpdate, u.sub, u.namespace, u.name, obj, old, u.params.dryRun, u.opts)
		if err := rh.mutate(ctx, attrs); err != nil {
			return nil, err
		}
		obj = attrs.Object
		md = metadata(obj)
		if f := rh.Strategy.PrepareForUpdate; f != nil && u.sub == "" {
			f(ctx, obj, old)
		}
		causes := rh.typeMetaCauses(obj)
		if len(causes) == 0 {
			if rh.specChanged(obj, old) {
				md["generation"] = generation(oldMD) + 1
			}
			om, st := rh.objectMeta(md)
			if st != nil {
				return nil, st
			}
			oldOM, st := rh.objectMeta(oldMD)
			if st != nil {
				return nil, st
			}
			causes = meta.ValidateObjectMetaUpdate(om, oldOM)
			if f := rh.Strategy.ValidateUpdate; f != nil {
				causes = append(causes, f(ctx, obj, old)...)
			}
		}
		if len(causes) > 0 {
			return nil, meta.NewInvalid(rh.gk, u.name, causes)
		}
		if err := rh.validateAdmission(ctx, attrs); err != nil {
			return nil, err
		}
		rh.h.jsonPass(1)
		return json.Marshal(obj)
	}
	key := rh.key(u.namespace, u.name)
	ec := ErrorContext{Name: u.name, Verb: u.verb}
	allowCreate := rh.Strategy.AllowCreateOnUpdate && !u.patch && u.sub == ""
	code := http.StatusOK
	if u.params.dryRun {
		cur, err := rh.Storage.Get(ctx, key, storage.GetOptions{})
		if err != nil && !(errors.Is(err, storage.ErrNotFound) && allowCreate) {
			rh.fail(w, err, ec)
			return
		}
		data, err := tryUpdate(cur)
		if err != nil {
			rh.fail(w, err, ec)
			return
		}
		if created {
			code = http.StatusCreated
		}
		addWarnings(ctx, warnings)
		rh.writeOne(w, o, code, data)
		return
	}
	res, err := rh.Storage.Update(ctx, key, storage.UpdateOptions{IgnoreNotFound: allowCreate}, tryUpdate)
	if err != nil {
		rh.fail(w, err, ec)
		return
	}
	if created {
		code = http.StatusCreated
	}
	addWarnings(ctx, warnings)
	rh.writeOne(w, o, code, res.Data)
}

// specChanged reports whether anything outside metadata (and status, when
// it is a subresource) differs: what bumps metadata.generation.
func (rh *resourceHandler) specChanged(obj, old Object) bool {
	strip := func(o Object) map[string]any {
		c := make(map[string]any, len(o))
		for k, v := range o {
			if k != "metadata" && k != "apiVersion" && k != "kind" && !(k == "status" && rh.StatusSubresource) {
				c[k] = v
			}
		}
		return c
	}
	rh.h.jsonPass(2)
	a, errA := json.Marshal(strip(obj))
	b, errB := json.Marshal(strip(old))
	return errA != nil || errB != nil || !bytes.Equal(a, b)
}

// createOnUpdate builds the object a PUT creates when the strategy allows it:
// create's rules, with uid and creationTimestamp set here because an update
// does not set them in storage.
func (rh *resourceHandler) createOnUpdate(ctx context.Context, obj Object, u updateRequest) ([]byte, error) {
	md := metadata(obj)
	for _, k := range []string{"resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "managedFields"} {
		delete(md, k)
	}
	attrs := rh.attributes(ctx, OperationCreate, "", u.namespace, u.name, obj, nil, u.params.dryRun, u.opts)
	if err := rh.mutate(ctx, attrs); err != nil {
		return nil, err
	}
	obj = attrs.Object
	md = metadata(obj)
	md["uid"] = storage.NewUID()
	md["creationTimestamp"] = time.Now().UTC().Format(time.RFC3339)
	md["generation"] = 1
	if rh.StatusSubresource {
		delete(obj, "status")
	}
	if f := rh.Strategy.PrepareForCreate; f != nil {
		f(ctx, obj)
	}
	if st := rh.validateCreate(ctx, obj); st != nil {
		return nil, st
	}
	if err := rh.validateAdmission(ctx, attrs); err != nil {
		return nil, err
	}
	rh.h.jsonPass(1)
	return json.Marshal(obj)
}

// deleteOptions are the parsed DeleteOptions of a delete.
type deleteOptions struct {
	uid, resourceVersion *string
	dryRun               bool
}

// parseDeleteOptions reads DeleteOptions from the body, or, without one,
// from the query.
func (rh *resourceHandler) parseDeleteOptions(r *http.Request) (deleteOptions, *meta.Status) {
	var opts deleteOptions
	var raw struct {
		Kind              string   `json:"kind"`
		APIVersion        string   `json:"apiVersion"`
		DryRun            []string `json:"dryRun"`
		PropagationPolicy *string  `json:"propagationPolicy"`
		OrphanDependents  *bool    `json:"orphanDependents"`
		Preconditions     *struct {
			UID             *string `json:"uid"`
			ResourceVersion *string `json:"resourceVersion"`
		} `json:"preconditions"`
	}
	q := r.URL.Query()
	body, st := readBody(r)
	if st != nil {
		return opts, st
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &raw); err != nil {
			return opts, meta.NewBadRequest(err.Error())
		}
		switch raw.APIVersion {
		case "", "v1", "meta.k8s.io/v1", rh.apiVersion:
		default:
			return opts, meta.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (v1)", raw.APIVersion))
		}
		if raw.Preconditions != nil {
			opts.uid, opts.resourceVersion = raw.Preconditions.UID, raw.Preconditions.ResourceVersion
		}
	} else {
		raw.DryRun = q["dryRun"]
		if v, ok := q["propagationPolicy"]; ok && len(v) > 0 {
			raw.PropagationPolicy = &v[0]
		}
		if v, ok := q["orphanDependents"]; ok {
			b := queryBool(v)
			raw.OrphanDependents = &b
		}
	}
	var causes []meta.StatusCause
	for _, s := range raw.DryRun {
		if s != "All" {
			causes = append(causes, fieldNotSupported("dryRun", raw.DryRun, []string{"All"}))
			break
		}
	}
	if p := raw.PropagationPolicy; p != nil {
		switch *p {
		case "Orphan", "Background", "Foreground":
		default:
			causes = append(causes, fieldNotSupported("propagationPolicy", *p, []string{"Foreground", "Background", "Orphan", "nil"}))
		}
		if raw.OrphanDependents != nil {
			causes = append(causes, fieldInvalid("propagationPolicy", *p, "orphanDependents and deletionPropagation cannot be both set"))
		}
	}
	if len(causes) > 0 {
		return opts, meta.NewInvalid(meta.GroupKind{Group: "meta.k8s.io", Kind: "DeleteOptions"}, "", causes)
	}
	opts.dryRun = len(raw.DryRun) > 0
	return opts, nil
}

// preconditions returns the check BeforeDelete makes, with its messages;
// the Conflict names the Kind, as k8s does there.
func (rh *resourceHandler) preconditions(opts deleteOptions) storage.ValidateFunc {
	if opts.uid == nil && opts.resourceVersion == nil {
		return nil
	}
	gr := meta.GroupResource{Group: rh.Group, Resource: rh.Kind}
	return func(cur storage.Object) error {
		if opts.uid != nil && *opts.uid != cur.Meta.UID {
			return meta.NewConflict(gr, cur.Meta.Name, fmt.Sprintf(
				"the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated",
				*opts.uid, cur.Meta.UID))
		}
		rv := strconv.FormatUint(cur.ResourceVersion, 10)
		if opts.resourceVersion != nil && *opts.resourceVersion != rv {
			return meta.NewConflict(gr, cur.Meta.Name, fmt.Sprintf(
				"the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified",
				*opts.resourceVersion, rv))
		}
		return nil
	}
}

// delete removes the object and answers 200 with its last state, as for a
// CRD (ReturnDeletedObject).
func (rh *resourceHandler) delete(w http.ResponseWriter, r *http.Request, o output, namespace, name string) {
	opts, st := rh.parseDeleteOptions(r)
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	obj, err := rh.deleteOne(r.Context(), rh.key(namespace, name), opts)
	if err != nil {
		rh.fail(w, err, ErrorContext{Name: name, Verb: "delete"})
		return
	}
	rh.writeOne(w, o, http.StatusOK, obj.Data)
}

func (rh *resourceHandler) deleteOne(ctx context.Context, key string, opts deleteOptions) (storage.Object, error) {
	validate := rh.preconditions(opts)
	if rh.h.admission != nil {
		pre := validate
		validate = func(cur storage.Object) error {
			if pre != nil {
				if err := pre(cur); err != nil {
					return err
				}
			}
			old, st := rh.decodeObject(cur.Data)
			if st != nil {
				return meta.NewInternalError(errors.New(st.Message))
			}
			var do meta.DeleteOptions
			if opts.dryRun {
				do.DryRun = []string{"All"}
			}
			return rh.validateAdmission(ctx, rh.attributes(ctx, OperationDelete, "", cur.Meta.Namespace, cur.Meta.Name, nil, old, opts.dryRun, do))
		}
	}
	if opts.dryRun {
		cur, err := rh.Storage.Get(ctx, key, storage.GetOptions{})
		if err != nil {
			return cur, err
		}
		if validate != nil {
			if err := validate(cur); err != nil {
				return cur, err
			}
		}
		return cur, nil
	}
	return rh.Storage.Delete(ctx, key, storage.DeleteOptions{Validate: validate})
}

// deleteCollection lists the selected objects and deletes them one by one
// (not atomic, as in k8s); objects already gone are skipped, the first other
// error stops it. It answers the list of deleted objects.
func (rh *resourceHandler) deleteCollection(w http.ResponseWriter, r *http.Request, o output, namespace string) {
	ctx := r.Context()
	p, st := rh.parseListParams(r.URL.Query(), false)
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	opts, st := rh.parseDeleteOptions(r)
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	res, err := rh.Storage.List(ctx, storage.ResourcePrefix(rh.Group, rh.Plural, namespace), rh.storageListOptions(p))
	if err != nil {
		rh.fail(w, err, ErrorContext{Verb: "list", ResourceVersion: p.resourceVersion, Continue: p.continueToken})
		return
	}
	deleted := make([]storage.Object, 0, len(res.Items))
	for _, item := range res.Items {
		obj, err := rh.deleteOne(ctx, item.Key, opts)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			rh.fail(w, err, ErrorContext{Name: item.Meta.Name, Verb: "delete"})
			return
		}
		deleted = append(deleted, obj)
	}
	rh.writeList(w, o, deleted, res.ResourceVersion, "", nil)
}
