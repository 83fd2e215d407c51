// This file holds content negotiation: which response format an Accept header
// asks for, and which request body types are readable.

package rest

import (
	"mime"
	"sort"
	"strconv"
	"strings"

	"github.com/annexapi/annex/meta"
)

const (
	mediaJSON = "application/json"
	mediaYAML = "application/yaml"
	// Patch body types.
	mediaJSONPatch      = "application/json-patch+json"
	mediaMergePatch     = "application/merge-patch+json"
	mediaStrategicPatch = "application/strategic-merge-patch+json"
	mediaApplyPatch     = "application/apply-patch+yaml"
)

// acceptClause is one media range of an Accept header.
type acceptClause struct {
	typ, sub string
	params   map[string]string
	q        float64
	order    int
}

// parseAccept splits an Accept header into clauses ordered by q-value, then
// specificity, then position, as goautoneg (used by k8s.io/apiserver) does.
// Clauses with q=0 are dropped.
func parseAccept(header string) []acceptClause {
	var out []acceptClause
	for i, part := range strings.Split(header, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			// mime rejects some forms k8s tolerates (e.g. a bare "*"); keep
			// the type and drop the parameters.
			mt = strings.ToLower(strings.TrimSpace(strings.SplitN(part, ";", 2)[0]))
			params = nil
		}
		typ, sub, ok := strings.Cut(mt, "/")
		if !ok {
			if mt != "*" {
				continue
			}
			typ, sub = "*", "*"
		}
		c := acceptClause{typ: typ, sub: sub, params: params, q: 1, order: i}
		if qs, ok := params["q"]; ok {
			if q, err := strconv.ParseFloat(qs, 64); err == nil {
				c.q = q
			}
			delete(params, "q")
		}
		if c.q <= 0 {
			continue
		}
		out = append(out, c)
	}
	specificity := func(c acceptClause) int {
		switch {
		case c.typ == "*":
			return 0
		case c.sub == "*":
			return 1
		default:
			return 2 + len(c.params)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].q != out[j].q {
			return out[i].q > out[j].q
		}
		return specificity(out[i]) > specificity(out[j])
	})
	return out
}

// matchesYAML reports whether the clause names application/yaml itself.
func (c acceptClause) matchesYAML() bool { return c.typ == "application" && c.sub == "yaml" }

// matchesJSON reports whether the clause's type/subtype covers application/json.
func (c acceptClause) matchesJSON() bool {
	return (c.typ == "*" && c.sub == "*") || (c.typ == "application" && (c.sub == "*" || c.sub == "json"))
}

// plain reports whether the clause asks for no transformation: no as/g/v,
// and only the stream, sv, export and pretty parameters k8s understands.
func (c acceptClause) plain(stream bool) bool {
	for k, v := range c.params {
		switch k {
		case "as", "g", "v":
			return false
		case "stream":
			if v != "" && (!stream || v != "watch") {
				return false
			}
		case "sv":
			if v != "" && v != "v1" {
				return false
			}
		}
	}
	return true
}

// negotiateJSON reports whether an Accept header admits a plain JSON
// response. An empty header does.
func negotiateJSON(accept string, stream bool) bool {
	if strings.TrimSpace(accept) == "" {
		return true
	}
	for _, c := range parseAccept(accept) {
		if c.matchesJSON() && c.plain(stream) {
			return true
		}
	}
	return false
}

// errNotAcceptable is the 406 answer to an Accept header with nothing we produce.
func errNotAcceptable() *meta.Status {
	return meta.NewNotAcceptable([]string{mediaJSON})
}

// bodyType returns the media type of a request body, JSON or YAML, and
// false for any other; an empty Content-Type means JSON, as in
// k8s.io/apiserver.
func bodyType(contentType string) (string, bool) {
	if strings.TrimSpace(contentType) == "" {
		return mediaJSON, true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", false
	}
	return mt, mt == mediaJSON || mt == mediaYAML
}

// errUnsupportedBody is the 415 answer to an unreadable body type.
func errUnsupportedBody() *meta.Status {
	return meta.NewUnsupportedMediaType([]string{mediaJSON, mediaYAML})
}
