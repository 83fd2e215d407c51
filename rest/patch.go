// This file holds the patch verb: JSON patch (RFC 6902) and JSON merge patch
// (RFC 7386), applied with github.com/evanphx/json-patch/v5 (a well-kept
// library, as DESIGN.md asks, and the one Kubernetes itself uses) to the
// current state inside storage's guaranteed update, so a concurrent write
// makes the patch re-apply to the fresh state. Server-side apply
// (application/apply-patch+yaml) merges through the field manager (see
// apply.go). Strategic merge patch answers 415 as a CRD does, and OpenAPI
// lists the types served.

package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

// Limits on a JSON patch, as kube-apiserver's: at most 10,000 operations
// (more is a 413), and "copy" operations may together grow the document by
// at most 3 MiB (its JSONPatchMaxCopyBytes default; more fails to apply, a
// 422). Without the second, 25 copies of an array into itself take a 1 KiB
// object to 32 GiB.
const (
	maxJSONPatchOperations = 10000
	maxJSONPatchCopyBytes  = 3 << 20
)

// patch: decodePatch, then, as an update, store (tryUpdate with the patch
// applied to each try's stored state) and respond.
func (rh *resourceHandler) patch(w http.ResponseWriter, r *http.Request, o output, sub, namespace, name string) {
	wr := &writeRequest{verb: "patch", sub: sub, namespace: namespace, name: name}
	apply, applyPatch, st := rh.decodePatch(r, wr)
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	wr.opts = wr.params.patchOptions()
	wr.manager = managerName(wr.params.fieldManager, r.UserAgent())
	if applyPatch != nil {
		wr.applied = true
		wr.produce = rh.applyProduce(wr, applyPatch)
		rh.storeAndRespond(w, r, o, wr)
		return
	}
	wr.produce = func(cur storage.Object) (Object, *meta.Status) {
		// json-patch decodes the document and encodes the result.
		rh.h.jsonPass(2)
		patched, err := apply(cur.Data)
		if err != nil {
			// k8s answers a patch that does not apply with a generic 422.
			return nil, &meta.Status{Kind: "Status", APIVersion: "v1", Status: meta.StatusFailure,
				Message: err.Error(), Reason: meta.StatusReasonInvalid, Code: http.StatusUnprocessableEntity,
				Details: &meta.StatusDetails{Causes: []meta.StatusCause{{Type: "UnexpectedServerResponse", Message: err.Error()}}}}
		}
		wr.patched = patched
		return rh.decodeObject(patched)
	}
	rh.storeAndRespond(w, r, o, wr)
}

// decodePatch is a patch's decode step: the patch type (415 for strategic
// merge patch and unknown types), the options, and the body parsed: into
// the function that applies it to a stored object's bytes, or, for a
// server-side apply, into the applied configuration.
func (rh *resourceHandler) decodePatch(r *http.Request, wr *writeRequest) (func(doc []byte) ([]byte, error), Object, *meta.Status) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	applyType := mt == mediaApplyPatch && rh.fields != nil
	if err != nil || (mt != mediaJSONPatch && mt != mediaMergePatch && !applyType) {
		return nil, nil, meta.NewUnsupportedMediaType(rh.patchTypes())
	}
	p, st := parseWriteParams(r.URL.Query(), "PatchOptions")
	if st != nil {
		return nil, nil, st
	}
	if p.force != nil && !applyType {
		return nil, nil, meta.NewInvalid(meta.GroupKind{Group: "meta.k8s.io", Kind: "PatchOptions"}, "",
			[]meta.StatusCause{fieldForbidden("force", "may not be specified for non-apply patch")})
	}
	wr.params = p
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, nil, StatusForError(err, ErrorContext{})
	}
	switch mt {
	case mediaApplyPatch:
		patch, st := rh.decodeApply(body, wr)
		return nil, patch, st
	case mediaJSONPatch:
		if st := checkPatchSyntax(body, p.fieldValidation, &[]jsonPatchOp{}); st != nil {
			return nil, nil, st
		}
		ops, err := jsonpatch.DecodePatch(body)
		if err != nil {
			return nil, nil, meta.NewBadRequest(err.Error())
		}
		if len(ops) > maxJSONPatchOperations {
			return nil, nil, meta.NewRequestEntityTooLarge(fmt.Sprintf(
				"The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(ops)))
		}
		opts := jsonpatch.NewApplyOptions()
		opts.AccumulatedCopySizeLimit = maxJSONPatchCopyBytes
		return guardPanic(func(doc []byte) ([]byte, error) { return ops.ApplyWithOptions(doc, opts) }), nil, nil
	}
	if st := checkPatchSyntax(body, p.fieldValidation, &map[string]any{}); st != nil {
		return nil, nil, st
	}
	if !json.Valid(body) || !strings.HasPrefix(strings.TrimSpace(string(body)), "{") {
		return nil, nil, meta.NewBadRequest(jsonpatch.ErrBadJSONPatch.Error())
	}
	return guardPanic(func(doc []byte) ([]byte, error) { return jsonpatch.MergePatch(doc, body) }), nil, nil
}

// patchInvalid is kube's answer for a patched object that does not decode
// (strictly, under fieldValidation=Strict): a 422 on no kind or name whose
// one cause is the field "patch", valued the patched JSON.
func patchInvalid(patched []byte, msg string) *meta.Status {
	return meta.NewInvalid(meta.GroupKind{}, "", []meta.StatusCause{{Type: meta.CauseTypeFieldValueInvalid, Field: "patch",
		Message: "Invalid value: " + strconv.Quote(string(patched)) + ": " + msg}})
}

// jsonPatchOp is one operation of a JSON patch, as kube's patch handler
// reads it to check the patch's syntax.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from"`
	Value any    `json:"value"`
}

// checkPatchSyntax is kube's first reading of a JSON or merge patch when
// fieldValidation is Strict or Warn (the default): a patch that does not
// decode into v is a 400 "error decoding patch", with encoding/json's
// words and kube's name for the type of a JSON patch.
func checkPatchSyntax(body []byte, fieldValidation string, v any) *meta.Status {
	if fieldValidation != fieldValidationStrict && fieldValidation != fieldValidationWarn {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		msg := strings.ReplaceAll(err.Error(), "rest.jsonPatchOp", "handlers.jsonPatchOp")
		return meta.NewBadRequest("error decoding patch: " + msg)
	}
	return nil
}

// guardPanic turns a panic of the patch library into an error (answered
// 422, as a patch that does not apply): json-patch v5.9.11 dereferences nil
// on a "test" of the root without a value, [{"op":"test","path":""}], which
// FuzzPatch found; a client's patch must never be a 500.
func guardPanic(apply func(doc []byte) ([]byte, error)) func(doc []byte) ([]byte, error) {
	return func(doc []byte) (out []byte, err error) {
		defer func() {
			if p := recover(); p != nil {
				out, err = nil, errors.New("the patch could not be applied to the object")
			}
		}()
		return apply(doc)
	}
}
