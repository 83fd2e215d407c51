// This file parses and validates the query parameters of list, watch and
// write requests, with the messages k8s.io/apiserver gives for bad ones.

package rest

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

// listParams are the parsed ListOptions of a list, watch or deletecollection.
type listParams struct {
	labels            meta.LabelSelector
	fields            meta.FieldSelector
	limit             int64
	continueToken     string
	resourceVersion   string
	rvMatch           string
	timeoutSeconds    int64
	allowBookmarks    bool
	sendInitialEvents bool
	// needsDecode is true when a field selector names a field outside metadata.
	needsDecode bool
}

// listOptionsGK is the kind k8s names in ListOptions validation errors.
func listOptionsGK() meta.GroupKind { return meta.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"} }

// queryBool is apimachinery's []string → bool conversion: absent, "0" and
// "false" (any case) are false; anything else is true.
func queryBool(v []string) bool {
	return len(v) > 0 && v[0] != "0" && !strings.EqualFold(v[0], "false")
}

// parseListParams decodes and validates q for a list (watch false) or a
// watch, returning the Status to answer with when they are invalid.
func (rh *resourceHandler) parseListParams(q url.Values, watch bool) (listParams, *meta.Status) {
	var p listParams
	for _, k := range []string{"limit", "timeoutSeconds"} {
		if v := q.Get(k); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return p, meta.NewBadRequest(err.Error())
			}
			if k == "limit" {
				p.limit = n
			} else {
				p.timeoutSeconds = n
			}
		}
	}
	if p.limit < 0 {
		p.limit = 0
	}
	var err error
	if p.labels, err = meta.ParseLabelSelector(q.Get("labelSelector")); err != nil {
		return p, meta.NewBadRequest(err.Error())
	}
	if p.fields, err = meta.ParseFieldSelector(q.Get("fieldSelector")); err != nil {
		return p, meta.NewBadRequest(err.Error())
	}
	for _, req := range p.fields.Requirements() {
		known := false
		for _, f := range rh.fieldNames {
			if req.Field == f {
				known = true
				break
			}
		}
		if !known {
			return p, meta.NewBadRequest(rh.unknownFieldMessage(req.Field))
		}
		if req.Field != "metadata.name" && req.Field != "metadata.namespace" {
			p.needsDecode = true
		}
	}
	p.continueToken = q.Get("continue")
	p.resourceVersion = q.Get("resourceVersion")
	p.rvMatch = q.Get("resourceVersionMatch")
	p.allowBookmarks = queryBool(q["allowWatchBookmarks"])
	_, hasSIE := q["sendInitialEvents"]
	p.sendInitialEvents = queryBool(q["sendInitialEvents"])

	var causes []meta.StatusCause
	if watch {
		if hasSIE {
			if p.rvMatch != string(storage.MatchNotOlderThan) {
				causes = append(causes, fieldForbidden("resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
			}
			// A store without the watch cache cannot send initial events:
			// answer as an apiserver with the feature gate off, which makes
			// client-go fall back to list+watch.
			if !rh.sendsInitialEvents() {
				causes = append(causes, fieldForbidden("sendInitialEvents", "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"))
			}
		}
		if p.rvMatch != "" {
			if !hasSIE {
				causes = append(causes, fieldForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
			}
			if p.rvMatch != string(storage.MatchNotOlderThan) {
				causes = append(causes, fieldNotSupported("resourceVersionMatch", p.rvMatch, []string{string(storage.MatchNotOlderThan)}))
			}
			if p.continueToken != "" {
				causes = append(causes, fieldForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"))
			}
		}
	} else {
		if m := p.rvMatch; m != "" {
			if p.resourceVersion == "" {
				causes = append(causes, fieldForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"))
			}
			if p.continueToken != "" {
				causes = append(causes, fieldForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"))
			}
			if m != string(storage.MatchExact) && m != string(storage.MatchNotOlderThan) {
				causes = append(causes, fieldNotSupported("resourceVersionMatch", m, []string{string(storage.MatchExact), string(storage.MatchNotOlderThan), ""}))
			}
			if m == string(storage.MatchExact) && p.resourceVersion == "0" {
				causes = append(causes, fieldForbidden("resourceVersionMatch", `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`))
			}
		}
		if hasSIE {
			causes = append(causes, fieldForbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
		}
	}
	if len(causes) > 0 {
		return p, meta.NewInvalid(listOptionsGK(), "", causes)
	}
	if st := checkResourceVersion(p.resourceVersion); st != nil {
		return p, st
	}
	if !watch && p.continueToken != "" && p.resourceVersion != "" && p.resourceVersion != "0" {
		return p, meta.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	return p, nil
}

// checkResourceVersion rejects a resourceVersion that is not "", "0" or a
// decimal revision, with the message k8s's versioner gives (k8s answers 500;
// a malformed request is a 400 here).
func checkResourceVersion(rv string) *meta.Status {
	if rv == "" {
		return nil
	}
	if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
		c := fieldInvalid("resourceVersion", rv, err.Error())
		return meta.NewBadRequest(c.Field + ": " + c.Message)
	}
	return nil
}

// unknownFieldMessage is the 400 text of a field selector on an unknown field.
func (rh *resourceHandler) unknownFieldMessage(field string) string {
	var b strings.Builder
	b.WriteString(strconv.Quote(field))
	b.WriteString(" is not a known field selector: only ")
	for i, f := range rh.fieldNames {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(f))
	}
	return b.String()
}

// predicate returns the storage predicate of the selectors, or nil when they
// select everything.
func (rh *resourceHandler) predicate(p listParams) storage.Predicate {
	if p.labels.Empty() && p.fields.Empty() {
		return nil
	}
	labels, fields, decode, extra := p.labels, p.fields, p.needsDecode, rh.Strategy.SelectableFields
	// The label selector's fingerprint lets the watch cache skip objects
	// that cannot match without reading them (storage.Selection).
	return storage.Selection{Need: labels.Need(), Match: func(o *storage.Object) bool {
		// A pointer in the interface: the labels are not copied to the
		// heap for each object a list scans.
		if !labels.Empty() && !labels.MatchesSet(&o.Meta.Labels) {
			return false
		}
		if fields.Empty() {
			return true
		}
		set := map[string]string{"metadata.name": o.Meta.Name, "metadata.namespace": o.Meta.Namespace}
		if decode {
			// Selectable fields are read at the version asked for.
			data, err := rh.asServedObject(context.Background(), o)
			if err != nil {
				return false
			}
			addSelectableFields(set, data, extra)
		}
		return fields.Matches(set)
	}}
}

// dryRunParam validates the dryRun query parameter of a write: only "All"
// is valid. kind names the options type in the 422 ("CreateOptions", ...).
func dryRunParam(q url.Values, kind string) (bool, *meta.Status) {
	v, ok := q["dryRun"]
	if !ok {
		return false, nil
	}
	for _, s := range v {
		if s != "All" {
			return false, meta.NewInvalid(meta.GroupKind{Group: "meta.k8s.io", Kind: kind}, "",
				[]meta.StatusCause{fieldNotSupported("dryRun", v, []string{"All"})})
		}
	}
	return len(v) > 0, nil
}
