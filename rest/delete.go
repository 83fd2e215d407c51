// This file holds the delete verbs, delete and deletecollection, in the
// write path's steps: decode (the DeleteOptions), admit (validating
// admission, inside storage's delete, on the stored object), store
// (storeDelete), respond.

package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/annexapi/annex/attrs"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

// deleteOptions are the parsed DeleteOptions of a delete.
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
	step := startStorage(r.Context())
	obj, err := rh.storeDelete(r.Context(), rh.key(namespace, name), opts)
	step.storageDone(r.Context(), err)
	if err != nil {
		rh.fail(w, err, ErrorContext{Name: name, Verb: "delete"})
		return
	}
	rh.writeOne(w, o, http.StatusOK, obj.Data)
}

// storeDelete is the store step of a delete: storage deletes the object
// after the preconditions and validating admission (admitDelete) accept its
// stored state. A dry run reads the object, runs the same checks, and
// deletes nothing.
func (rh *resourceHandler) storeDelete(ctx context.Context, key string, opts deleteOptions) (storage.Object, error) {
	validate := rh.preconditions(opts)
	if rh.h.admission != nil {
		pre := validate
		validate = func(cur storage.Object) error {
			if pre != nil {
				if err := pre(cur); err != nil {
					return err
				}
			}
			return rh.admitDelete(ctx, cur, opts)
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

// admitDelete runs validating admission on the deletion of cur, decoded as
// the old object.
func (rh *resourceHandler) admitDelete(ctx context.Context, cur storage.Object, opts deleteOptions) error {
	old, st := rh.decodeObject(cur.Data)
	if st != nil {
		return meta.NewInternalError(errors.New(st.Message))
	}
	var do meta.DeleteOptions
	if opts.dryRun {
		do.DryRun = []string{"All"}
	}
	wr := &writeRequest{verb: "delete", namespace: cur.Meta.Namespace, name: cur.Meta.Name, params: writeParams{dryRun: opts.dryRun}, opts: do}
	return rh.admit(ctx, validating, rh.attributes(ctx, attrs.Delete, wr, nil, old))
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
		obj, err := rh.storeDelete(ctx, item.Key, opts)
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
