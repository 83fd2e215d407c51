// This file holds the delete verbs, delete and deletecollection, in the
// write path's steps: decode (the DeleteOptions), admit (validating
// admission, inside storage's delete, on the stored object), store
// (storeDelete), respond.

package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/internal/attrs"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

// deleteOptions are the parsed DeleteOptions of a delete.
type deleteOptions struct {
	uid, resourceVersion *string
	dryRun               bool
	// propagation is propagationPolicy (Orphan, Foreground, Background) and
	// orphanDependents its deprecated form; nil when not given.
	propagation      *string
	orphanDependents *bool
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
	opts.propagation, opts.orphanDependents = raw.PropagationPolicy, raw.OrphanDependents
	return opts, nil
}

// The garbage collector's finalizers (metav1.FinalizerOrphanDependents and
// FinalizerDeleteDependents).
const (
	finalizerOrphan     = "orphan"
	finalizerForeground = "foregroundDeletion"
)

// orphans and foreground say whether a deletion with opts orphans the
// object's dependents or deletes them first, as kube-apiserver's generic
// store decides for a resource whose default policy is background deletion
// (a custom resource's): the options first, then the finalizers the object
// already has.
func (opts deleteOptions) orphans(finalizers []string) bool {
	if opts.orphanDependents != nil {
		return *opts.orphanDependents
	}
	if opts.propagation != nil {
		return *opts.propagation == "Orphan"
	}
	for _, f := range finalizers {
		switch f {
		case finalizerOrphan:
			return true
		case finalizerForeground:
			return false
		}
	}
	return false
}

func (opts deleteOptions) foreground(finalizers []string) bool {
	if opts.orphanDependents != nil {
		return false
	}
	if opts.propagation != nil {
		return *opts.propagation == "Foreground"
	}
	for _, f := range finalizers {
		switch f {
		case finalizerOrphan:
			return false
		case finalizerForeground:
			return true
		}
	}
	return false
}

// deletionFinalizers is the finalizer list a deletion with opts leaves: the
// object's own, with orphan or foregroundDeletion as the policy wants.
func (opts deleteOptions) deletionFinalizers(finalizers []string) []string {
	out := make([]string, 0, len(finalizers)+1)
	for _, f := range finalizers {
		if f != finalizerOrphan && f != finalizerForeground {
			out = append(out, f)
		}
	}
	if opts.orphans(finalizers) {
		out = append(out, finalizerOrphan)
	}
	if opts.foreground(finalizers) {
		out = append(out, finalizerForeground)
	}
	return out
}

// addsFinalizer says whether the deletion itself asks for a garbage
// collector finalizer, whatever the object has.
func (opts deleteOptions) addsFinalizer() bool {
	return (opts.orphanDependents != nil && *opts.orphanDependents) ||
		(opts.orphanDependents == nil && opts.propagation != nil && (*opts.propagation == "Orphan" || *opts.propagation == "Foreground"))
}

// markDeleting is a deletion's change to the stored object cur, as
// kube-apiserver's generic store makes it: the finalizers the propagation
// policy asks for, and, while any finalizer remains, deletionTimestamp (now,
// unless already set), deletionGracePeriodSeconds 0 and, the first time,
// generation + 1. It returns the object to store, or remains false when
// nothing holds the object back: it is deleted now.
func (rh *resourceHandler) markDeleting(cur storage.Object, opts deleteOptions, now time.Time) (data []byte, remains bool, err error) {
	if !opts.addsFinalizer() && !bytes.Contains(cur.Data, []byte(`"finalizers"`)) {
		return nil, false, nil // the common case, without decoding the object
	}
	obj, st := rh.decodeObject(cur.Data)
	if st != nil {
		return nil, false, meta.NewInternalError(errors.New(st.Message))
	}
	md := metadata(obj)
	var finalizers []string
	if l, ok := md["finalizers"].([]any); ok {
		for _, f := range l {
			if s, ok := f.(string); ok {
				finalizers = append(finalizers, s)
			}
		}
	}
	finalizers = opts.deletionFinalizers(finalizers)
	if len(finalizers) == 0 {
		return nil, false, nil
	}
	l := make([]any, len(finalizers))
	for i, f := range finalizers {
		l[i] = f
	}
	md["finalizers"] = l
	if _, deleting := md["deletionTimestamp"]; !deleting {
		if g := generation(md); g > 0 {
			md["generation"] = g + 1
		}
		md["deletionTimestamp"] = now.UTC().Format(time.RFC3339)
	}
	md["deletionGracePeriodSeconds"] = 0
	data, err = rh.encode(obj)
	return data, true, err
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
// CRD (ReturnDeletedObject); an object a finalizer holds back stays, marked
// as being deleted, and is the answer (202 when orphanDependents=false asked
// for its dependents to go first, as kube-apiserver's delete handler).
func (rh *resourceHandler) delete(w http.ResponseWriter, r *http.Request, o output, namespace, name string) {
	opts, st := rh.parseDeleteOptions(r)
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	step := startStorage(r.Context())
	obj, deleted, err := rh.storeDelete(r.Context(), rh.key(namespace, name), opts)
	step.storageDone(r.Context(), err)
	if err != nil {
		rh.fail(w, err, ErrorContext{Name: name, Verb: "delete"})
		return
	}
	code := http.StatusOK
	if !deleted && opts.orphanDependents != nil && !*opts.orphanDependents {
		code = http.StatusAccepted
	}
	rh.writeOne(r.Context(), w, o, code, obj.Data)
}

// storeDelete is the store step of a delete: once the preconditions and
// validating admission (admitDelete) accept the stored state, one
// conditional write either deletes the object or, when finalizers hold it
// back (its own, or the one its propagation policy adds), marks it as being
// deleted (markDeleting). deleted says which. A dry run reads the object,
// runs the same checks, and writes nothing.
func (rh *resourceHandler) storeDelete(ctx context.Context, key string, opts deleteOptions) (obj storage.Object, deleted bool, err error) {
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
	now := time.Now()
	if opts.dryRun {
		cur, err := rh.Storage.Get(ctx, key, storage.GetOptions{})
		if err != nil {
			return cur, false, err
		}
		if validate != nil {
			if err := validate(cur); err != nil {
				return cur, false, err
			}
		}
		data, remains, err := rh.markDeleting(cur, opts, now)
		if err != nil || !remains {
			return cur, err == nil, err
		}
		cur.Data = data
		return cur, false, nil
	}
	obj, err = rh.Storage.Update(ctx, key, storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
		deleted = false
		if validate != nil {
			if err := validate(cur); err != nil {
				return nil, err
			}
		}
		data, remains, err := rh.markDeleting(cur, opts, now)
		if err != nil {
			return nil, err
		}
		if !remains {
			deleted = true
			return nil, storage.ErrDeleteInstead
		}
		return data, nil
	})
	return obj, deleted, err
}

// admitDelete runs validating admission on the deletion of cur, decoded as
// the old object.
func (rh *resourceHandler) admitDelete(ctx context.Context, cur storage.Object, opts deleteOptions) error {
	data, err := rh.asServed(ctx, cur.Data)
	if err != nil {
		return err
	}
	old, st := rh.decodeObject(data)
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
// (not atomic, as in k8s), each as a delete would (finalizers keep an
// object, marked as being deleted); objects already gone are skipped, the
// first other error stops it. It answers the list as it was listed, as
// kube-apiserver does.
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
	if item, err := rh.deleteAll(ctx, res.Items, opts); err != nil {
		rh.fail(w, err, ErrorContext{Name: item.Meta.Name, Verb: "delete"})
		return
	}
	rh.writeList(r.Context(), w, o, res.Items, res.ResourceVersion, "", nil)
}

// deleteAll deletes items with the handler's deleteWorkers at once (kube's
// --delete-collection-workers), skipping those already gone; the first
// failure stops the others and is returned with its item.
func (rh *resourceHandler) deleteAll(ctx context.Context, items []storage.Object, opts deleteOptions) (storage.Object, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan storage.Object)
	var mu sync.Mutex
	var failed storage.Object
	var failure error
	var wg sync.WaitGroup
	for range min(rh.h.deleteWorkers, max(len(items), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for item := range work {
				_, _, err := rh.storeDelete(ctx, item.Key, opts)
				if err == nil || errors.Is(err, storage.ErrNotFound) {
					continue
				}
				mu.Lock()
				if failure == nil {
					failed, failure = item, err
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	for _, item := range items {
		select {
		case work <- item:
			continue
		case <-ctx.Done():
		}
		break
	}
	close(work)
	wg.Wait()
	return failed, failure
}
