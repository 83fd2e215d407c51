// This file holds the scale subresource, <plural>/<name>/scale, as a CRD
// serves it: an autoscaling/v1 Scale read from and written to the object's
// replicas paths (kubectl scale, the HorizontalPodAutoscaler).

package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

// Scale declares the scale subresource, as a CRD's subresources.scale: the
// paths are JSON paths of the form ".spec.replicas".
type Scale struct {
	// SpecReplicasPath is the desired replicas, an integer field under
	// .spec. Required.
	SpecReplicasPath string
	// StatusReplicasPath is the observed replicas, under .status.
	// Required.
	StatusReplicasPath string
	// LabelSelectorPath is the string form of the pods' label selector,
	// under .status or .spec; optional.
	LabelSelectorPath string
}

// scaleInvalidReplicas marks a Scale built from an object without spec
// replicas, as kube-apiserver does (the smallest int32).
const scaleInvalidReplicas = -2147483648

// scaleObject is autoscaling/v1 Scale.
type scaleObject struct {
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Metadata   map[string]any `json:"metadata"`
	Spec       struct {
		Replicas int32 `json:"replicas"`
	} `json:"spec"`
	Status struct {
		Replicas int32  `json:"replicas"`
		Selector string `json:"selector,omitempty"`
	} `json:"status"`
}

// scaleCauses are kube's checks of the scale subresource's paths on every
// write of an object (ValidateScaleSpec, but on the status subresource, and
// ValidateScaleStatus): the replicas, when set, are integers from 0 to
// 2^31-1, the label selector a string.
func (rh *resourceHandler) scaleCauses(obj Object, sub string) []meta.StatusCause {
	if rh.Scale == nil {
		return nil
	}
	var causes []meta.StatusCause
	replicas := func(p string) {
		n, _, err := nestedInt64(obj, scalePath(p))
		switch {
		case err != nil:
			causes = append(causes, fieldInvalid(p, n, err.Error()))
		case n < 0:
			causes = append(causes, fieldInvalid(p, n, "should be a non-negative integer"))
		case n > math.MaxInt32:
			causes = append(causes, fieldInvalid(p, n, fmt.Sprintf("should be less than or equal to %d", math.MaxInt32)))
		}
	}
	if sub != "status" {
		replicas(rh.Scale.SpecReplicasPath)
	}
	replicas(rh.Scale.StatusReplicasPath)
	if p := rh.Scale.LabelSelectorPath; p != "" {
		if v, found := lookup(obj, scalePath(p)); found {
			if _, ok := v.(string); !ok {
				causes = append(causes, fieldInvalid(p, "", fmt.Sprintf("%s accessor error: %v is of the type %T, expected string", p, v, v)))
			}
		}
	}
	return causes
}

func scalePath(p string) []string { return strings.Split(strings.TrimPrefix(p, "."), ".") }

// nestedInt64 reads an integer at path, as unstructured.NestedInt64 does,
// with its errors: a value on the way that is not an object, or at the end
// that is not an integer (named by its Go type as kube decodes JSON).
func nestedInt64(obj Object, path []string) (int64, bool, error) {
	var cur any = obj
	for i, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			v := kubeValue(cur)
			return 0, false, fmt.Errorf(".%s accessor error: %v is of the type %T, expected map[string]interface{}", strings.Join(path[:i+1], "."), v, v)
		}
		if cur, ok = m[k]; !ok {
			return 0, false, nil
		}
	}
	v := kubeValue(cur)
	n, ok := v.(int64)
	if !ok {
		return 0, false, fmt.Errorf(".%s accessor error: %v is of the type %T, expected int64", strings.Join(path, "."), v, v)
	}
	return n, true, nil
}

// kubeValue is v as kube's JSON decoding holds it: a number as an int64
// when it is one, else a float64.
func kubeValue(v any) any {
	n, ok := v.(json.Number)
	if !ok {
		return v
	}
	if i, err := n.Int64(); err == nil {
		return i
	}
	f, _ := n.Float64()
	return f
}

// scaleOf builds the Scale of an object; found says whether spec replicas
// were there.
func (rh *resourceHandler) scaleOf(obj Object) (*scaleObject, bool, error) {
	spec, found, err := nestedInt64(obj, scalePath(rh.Scale.SpecReplicasPath))
	if err != nil {
		return nil, false, err
	}
	status, _, err := nestedInt64(obj, scalePath(rh.Scale.StatusReplicasPath))
	if err != nil {
		return nil, false, err
	}
	s := &scaleObject{Kind: "Scale", APIVersion: "autoscaling/v1", Metadata: map[string]any{}}
	md := metadata(obj)
	for _, k := range []string{"name", "namespace", "uid", "resourceVersion", "creationTimestamp"} {
		if v, ok := md[k]; ok && v != "" {
			s.Metadata[k] = v
		}
	}
	s.Spec.Replicas, s.Status.Replicas = int32(spec), int32(status)
	if p := rh.Scale.LabelSelectorPath; p != "" {
		sel, _ := lookup(obj, scalePath(p))
		s.Status.Selector, _ = sel.(string)
	}
	return s, found, nil
}

// getScale answers GET .../scale.
func (rh *resourceHandler) getScale(w http.ResponseWriter, r *http.Request, namespace, name string) {
	ctx := r.Context()
	stored, err := rh.Storage.Get(ctx, rh.key(namespace, name), storage.GetOptions{ResourceVersion: filters.QueryValue(r, "resourceVersion")})
	if err != nil {
		rh.fail(w, err, ErrorContext{Name: name, Verb: "get"})
		return
	}
	rh.writeScale(ctx, w, http.StatusOK, stored.Data, true)
}

// writeScale writes the Scale of stored bytes; needReplicas makes a
// missing spec replicas field a 500, as kube's GET.
func (rh *resourceHandler) writeScale(ctx context.Context, w http.ResponseWriter, code int, data []byte, needReplicas bool) {
	data, err := rh.asServed(ctx, data)
	if err != nil {
		rh.fail(w, err, ErrorContext{})
		return
	}
	obj, st := rh.decodeObject(data)
	if st != nil {
		filters.WriteStatus(w, meta.NewInternalError(fmt.Errorf("%s", st.Message)))
		return
	}
	s, found, err := rh.scaleOf(obj)
	switch {
	case err != nil:
		filters.WriteStatus(w, meta.NewInternalError(err))
		return
	case !found && needReplicas:
		filters.WriteStatus(w, meta.NewInternalError(fmt.Errorf("the spec replicas field %q does not exist", rh.Scale.SpecReplicasPath)))
		return
	}
	b, err := json.Marshal(s)
	if err != nil {
		filters.WriteStatus(w, meta.NewInternalError(err))
		return
	}
	rh.h.writeObject(w, false, code, b) // a Scale is small
}

// scaleProduce returns the produce step of a write to .../scale: the
// stored object's Scale changed by change (the PUT body, or a patch applied
// to the Scale's JSON), and its spec replicas written back to the object.
// The Scale's resourceVersion, when set, is the update's precondition;
// patched says change applies a patch.
func (rh *resourceHandler) scaleProduce(patched bool, change func(old []byte) ([]byte, *meta.Status)) func(cur storage.Object) (Object, *meta.Status) {
	return func(cur storage.Object) (Object, *meta.Status) {
		obj, st := rh.decodeObject(cur.Data)
		if st != nil {
			return nil, meta.NewInternalError(fmt.Errorf("%s", st.Message))
		}
		old, found, err := rh.scaleOf(obj)
		if err != nil {
			return nil, meta.NewInternalError(err)
		}
		if !found {
			old.Spec.Replicas = scaleInvalidReplicas
		}
		oldJSON, err := json.Marshal(old)
		if err != nil {
			return nil, meta.NewInternalError(err)
		}
		newJSON, st := change(oldJSON)
		if st != nil {
			return nil, st
		}
		var s scaleObject
		if err := json.Unmarshal(newJSON, &s); err != nil {
			// kube's Scale spec is the type ScaleSpec; a patched Scale
			// that does not decode is its 422 on the patch.
			msg := strings.Replace(err.Error(), "Go struct field .spec.", "Go struct field ScaleSpec.spec.", 1)
			if patched {
				return nil, patchInvalid(newJSON, msg)
			}
			return nil, meta.NewBadRequest(msg)
		}
		if s.Kind != "" && s.Kind != "Scale" || s.APIVersion != "" && s.APIVersion != "autoscaling/v1" {
			return nil, meta.NewBadRequest(fmt.Sprintf("wrong object passed to Scale update: %s %s", s.APIVersion, s.Kind))
		}
		if s.Spec.Replicas == scaleInvalidReplicas {
			return nil, meta.NewBadRequest(fmt.Sprintf("the spec replicas field %q cannot be empty", rh.Scale.SpecReplicasPath))
		}
		path := scalePath(rh.Scale.SpecReplicasPath)
		m := obj
		for _, k := range path[:len(path)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[path[len(path)-1]] = json.Number(strconv.FormatInt(int64(s.Spec.Replicas), 10))
		if rv, _ := s.Metadata["resourceVersion"].(string); rv != "" {
			metadata(obj)["resourceVersion"] = rv
		}
		return obj, nil
	}
}

// updateScale answers PUT .../scale.
func (rh *resourceHandler) updateScale(w http.ResponseWriter, r *http.Request, namespace, name string) {
	wr := &writeRequest{verb: "update", sub: "scale", namespace: namespace, name: name}
	p, st := parseWriteParams(r.URL.Query(), "UpdateOptions")
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	wr.params = p
	body, st := readBody(r)
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	var s scaleObject
	if err := json.Unmarshal(body, &s); err != nil {
		filters.WriteStatus(w, meta.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type Scale): %v", err)))
		return
	}
	if n, _ := s.Metadata["name"].(string); n != "" && n != name {
		filters.WriteStatus(w, meta.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", n, name)))
		return
	}
	wr.opts = wr.params.updateOptions()
	wr.manager = managerName(wr.params.fieldManager, r.UserAgent())
	wr.produce = rh.scaleProduce(false, func([]byte) ([]byte, *meta.Status) { return body, nil })
	rh.storeScale(w, r, wr)
}

// patchScale answers PATCH .../scale (JSON or merge patch of the Scale).
func (rh *resourceHandler) patchScale(w http.ResponseWriter, r *http.Request, namespace, name string) {
	wr := &writeRequest{verb: "patch", sub: "scale", namespace: namespace, name: name}
	apply, applyPatch, st := rh.decodePatch(r, wr)
	if st == nil && applyPatch != nil {
		st = meta.NewUnsupportedMediaType([]string{mediaJSONPatch, mediaMergePatch})
	}
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	wr.opts = wr.params.patchOptions()
	wr.manager = managerName(wr.params.fieldManager, r.UserAgent())
	wr.produce = rh.scaleProduce(true, func(old []byte) ([]byte, *meta.Status) {
		out, err := apply(old)
		if err != nil {
			return nil, &meta.Status{Kind: "Status", APIVersion: "v1", Status: meta.StatusFailure,
				Message: err.Error(), Reason: meta.StatusReasonInvalid, Code: http.StatusUnprocessableEntity}
		}
		return out, nil
	})
	rh.storeScale(w, r, wr)
}

// storeScale stores a scale write and answers the new Scale.
func (rh *resourceHandler) storeScale(w http.ResponseWriter, r *http.Request, wr *writeRequest) {
	ctx := r.Context()
	data, ok := rh.storeUpdateStep(w, r, wr)
	if !ok {
		return
	}
	for _, msg := range wr.warnings {
		filters.AddWarning(ctx, msg)
	}
	rh.writeScale(ctx, w, http.StatusOK, data, false)
}
