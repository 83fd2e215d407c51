// Package review reads and writes the bodies of the reviews a user asks
// about themself (SelfSubjectAccessReview in authz, SelfSubjectReview in
// authn), as the API server's decoder and encoder do: bounded, JSON checked
// for its kind and apiVersion, Kubernetes protobuf handed back for the
// caller to read.
package review

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// maxBody bounds a review's body: it is a few hundred bytes.
const maxBody = 64 << 10

// MediaProtobuf is Kubernetes' protobuf media type; kubectl's typed
// clients send reviews in it.
const MediaProtobuf = "application/vnd.kubernetes.protobuf"

// ProtobufMagic starts every Kubernetes protobuf body.
var ProtobufMagic = []byte("k8s\x00")

// Read reads r's body. A JSON body is decoded into v and its kind and
// apiVersion checked; a protobuf body is returned as it is (v untouched).
// A non-nil Status is the answer to send.
func Read(r *http.Request, v any, kind, apiVersion string) (protobuf []byte, st *meta.Status) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, meta.NewBadRequest(err.Error())
	}
	if len(body) > maxBody {
		return nil, meta.NewRequestEntityTooLarge("the review is too large")
	}
	mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	switch strings.TrimSpace(mt) {
	case "", "application/json":
	case MediaProtobuf:
		if !bytes.HasPrefix(body, ProtobufMagic) {
			return nil, meta.NewBadRequest("the body of the request was in an unknown format: not a Kubernetes protobuf message")
		}
		return body[len(ProtobufMagic):], nil
	default:
		return nil, meta.NewUnsupportedMediaType([]string{"application/json", MediaProtobuf})
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, meta.NewBadRequest("the body of the request was in an unknown format: " + err.Error())
	}
	var tm struct{ Kind, APIVersion string }
	_ = json.Unmarshal(body, &tm)
	if (tm.Kind != "" && tm.Kind != kind) || (tm.APIVersion != "" && !strings.EqualFold(tm.APIVersion, apiVersion)) {
		return nil, meta.NewBadRequest("the API version in the data (" + tm.APIVersion + ") does not match the expected API version (" + apiVersion + ")")
	}
	return nil, nil
}

// Write answers 201 with v as JSON.
func Write(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		filters.WriteStatus(w, meta.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(append(b, '\n'))
}
