// This file serves the OpenAPI documents package openapi derives from the
// declarations: /openapi/v2 (with ETag and 304), /openapi/v3 (the root) and
// /openapi/v3/apis/<group>/<version> (with ?hash= caching), as
// k8s.io/apiserver and kube-openapi's handler3 do.

package rest

import (
	"net/http"
	"strings"
	"sync"
	"time"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"

	"github.com/annexapi/annex/meta"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/internal/openapi"
)

// openapiDocs are the encoded OpenAPI documents; v2's protobuf form
// (kube-openapi's, gnostic's openapi_v2.Document) is made on first request.
type openapiDocs struct {
	d       *openapi.Documents
	v2Proto func() ([]byte, error)
}

// The media types of /openapi/v2 as protobuf: the one kube answers with,
// and the older one client-go asks for.
const (
	mediaOpenAPIv2Proto           = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	mediaOpenAPIv2ProtoDeprecated = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
)

// v2Format is the form of /openapi/v2 an Accept header asks for, in its
// order of preference: "json", "protobuf" or "" (406).
func v2Format(accept string) string {
	if strings.TrimSpace(accept) == "" {
		return "json"
	}
	for _, c := range parseAccept(accept) {
		switch mt := c.typ + "/" + c.sub; {
		case c.matchesJSON() && c.plain(false):
			return "json"
		case mt == mediaOpenAPIv2Proto || mt == mediaOpenAPIv2ProtoDeprecated:
			return "protobuf"
		}
	}
	return ""
}

// patchTypes are the patch content types the handler accepts.
func (rh *resourceHandler) patchTypes() []string {
	if rh.fields == nil {
		return []string{mediaJSONPatch, mediaMergePatch}
	}
	return []string{mediaJSONPatch, mediaMergePatch, mediaApplyPatch}
}

func buildOpenAPI(title string, rs []*resourceHandler) (*openapiDocs, error) {
	var in []openapi.Resource
	for _, rh := range rs {
		r := openapi.Resource{Group: rh.Group, Version: rh.Version, Plural: rh.Plural, Kind: rh.Kind, ListKind: rh.ListKind,
			Namespaced: rh.Namespaced, Schema: rh.Schema, PatchTypes: rh.patchTypes(), FieldValidation: true}
		if rh.StatusSubresource {
			r.Subresources = []string{"status"}
		}
		in = append(in, r)
	}
	d, err := openapi.Build(openapi.Config{Title: title}, in)
	if err != nil {
		return nil, err
	}
	return &openapiDocs{d: d, v2Proto: sync.OnceValues(func() ([]byte, error) {
		doc, err := openapiv2.ParseDocument(d.V2)
		if err != nil {
			return nil, err
		}
		return proto.Marshal(doc)
	})}, nil
}

// serve answers an OpenAPI path and reports whether the path was one.
func (o *openapiDocs) serve(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	if p != "/openapi/v2" && p != "/openapi/v3" && !strings.HasPrefix(p, "/openapi/v3/") {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		filters.WriteStatus(w, errNotFoundPath())
		return true
	}
	accept := r.Header.Get("Accept")
	switch {
	case p == "/openapi/v2":
		// JSON, or protobuf for client-go's OpenAPISchema (kubectl explain
		// --output=plaintext-openapiv2); one ETag for both, as kube's, with
		// Vary.
		format := v2Format(accept)
		if format == "" {
			filters.WriteStatus(w, meta.NewNotAcceptable([]string{mediaJSON, mediaOpenAPIv2Proto}))
			return true
		}
		w.Header().Set("ETag", o.d.V2ETag)
		w.Header().Set("Vary", "Accept")
		if r.Header.Get("If-None-Match") == o.d.V2ETag {
			w.WriteHeader(http.StatusNotModified)
			return true
		}
		if format == "protobuf" {
			b, err := o.v2Proto()
			if err != nil {
				filters.WriteStatus(w, meta.NewInternalError(err))
				return true
			}
			writeDoc(w, mediaOpenAPIv2Proto, b)
			return true
		}
		writeDoc(w, mediaJSON, o.d.V2)
	case p == "/openapi/v3":
		if !negotiateJSON(accept, false) {
			filters.WriteStatus(w, errNotAcceptable())
			return true
		}
		writeDoc(w, mediaJSON, o.d.V3Root)
	default:
		key := strings.TrimPrefix(p, "/openapi/v3/")
		doc, ok := o.d.V3[key]
		if !ok {
			filters.WriteStatus(w, errNotFoundPath())
			return true
		}
		if !negotiateJSON(accept, false) {
			filters.WriteStatus(w, errNotAcceptable())
			return true
		}
		hash := o.d.V3Hash[key]
		h := w.Header()
		h.Set("Etag", `"`+hash+`"`)
		h.Set("Vary", "Accept")
		// A stale hash gets the current document without long caching; k8s
		// redirects, which the aggregator would turn into a 502.
		if filters.QueryValue(r, "hash") == hash {
			h.Set("Cache-Control", "public, immutable")
			h.Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
		}
		if r.Header.Get("If-None-Match") == `"`+hash+`"` {
			w.WriteHeader(http.StatusNotModified)
			return true
		}
		writeDoc(w, mediaJSON, doc)
	}
	return true
}
