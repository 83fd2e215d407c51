// This file holds discovery: /apis (legacy APIGroupList, or the aggregated
// v2 APIGroupDiscoveryList when the Accept asks for it), /apis/<group>
// (APIGroup) and /apis/<group>/<version> (APIResourceList). Every document is
// encoded once, at NewHandler.

package rest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// verbs are the verbs every resource serves, sorted as k8s sorts them.
func verbs() []string {
	return []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
}

// subresourceVerbs are the verbs of the status subresource.
func subresourceVerbs() []string { return []string{"get", "patch", "update"} }

// discoveryDocs are the encoded discovery documents.
type discoveryDocs struct {
	groupList []byte // /apis, legacy
	v2        []byte // /apis, aggregated
	v2ETag    string // quoted
	v2beta1   []byte // /apis, aggregated v2beta1 (same body, other apiVersion)
	v2b1ETag  string
	groups    map[string][]byte // /apis/<g>
	versions  map[string][]byte // /apis/<g>/<v>
}

func buildDiscovery(rs []*resourceHandler) (*discoveryDocs, error) {
	d := &discoveryDocs{groups: map[string][]byte{}, versions: map[string][]byte{}}
	var groupOrder []string
	versionOrder := map[string][]string{}
	byGV := map[string][]*resourceHandler{}
	for _, rh := range rs {
		if _, ok := versionOrder[rh.Group]; !ok {
			groupOrder = append(groupOrder, rh.Group)
		}
		gv := rh.apiVersion
		if _, ok := byGV[gv]; !ok {
			versionOrder[rh.Group] = append(versionOrder[rh.Group], rh.Version)
		}
		byGV[gv] = append(byGV[gv], rh)
	}
	list := meta.APIGroupList{TypeMeta: meta.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []meta.APIGroup{}}
	v2 := meta.APIGroupDiscoveryList{TypeMeta: meta.TypeMeta{Kind: meta.KindAPIGroupDiscoveryList, APIVersion: meta.DiscoveryGroupVersionV2}, Items: []meta.APIGroupDiscovery{}}
	for _, g := range groupOrder {
		ag := meta.APIGroup{Name: g}
		dg := meta.APIGroupDiscovery{Metadata: meta.ObjectMeta{Name: g}}
		for _, v := range versionOrder[g] {
			gv := g + "/" + v
			ag.Versions = append(ag.Versions, meta.GroupVersionForDiscovery{GroupVersion: gv, Version: v})
			rl := meta.APIResourceList{TypeMeta: meta.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv, APIResources: []meta.APIResource{}}
			dv := meta.APIVersionDiscovery{Version: v, Resources: []meta.APIResourceDiscovery{}, Freshness: meta.DiscoveryFreshnessCurrent}
			for _, rh := range byGV[gv] {
				stored := rh.Version
				if rh.versions != nil {
					stored = rh.versions.storageVersion
				}
				vs, hash := verbs(), meta.StorageVersionHash(rh.Group, stored, rh.Kind)
				if rh.computed() {
					// Not stored: no storage version hash, as metrics-server.
					vs, hash = rh.computedVerbs(), ""
				}
				rl.APIResources = append(rl.APIResources, meta.APIResource{
					Name: rh.Plural, SingularName: rh.Singular, Namespaced: rh.Namespaced, Kind: rh.Kind,
					Verbs: vs, ShortNames: rh.ShortNames, Categories: rh.Categories,
					StorageVersionHash: hash,
				})
				scope := meta.ScopeCluster
				if rh.Namespaced {
					scope = meta.ScopeNamespace
				}
				res := meta.APIResourceDiscovery{
					Resource: rh.Plural, ResponseKind: &meta.GroupVersionKind{Group: g, Version: v, Kind: rh.Kind},
					Scope: scope, SingularResource: rh.Singular, Verbs: vs,
					ShortNames: rh.ShortNames, Categories: rh.Categories,
				}
				if rh.StatusSubresource {
					rl.APIResources = append(rl.APIResources, meta.APIResource{
						Name: rh.Plural + "/status", Namespaced: rh.Namespaced, Kind: rh.Kind, Verbs: subresourceVerbs()})
					res.Subresources = append(res.Subresources, meta.APISubresourceDiscovery{
						Subresource: "status", ResponseKind: &meta.GroupVersionKind{Group: g, Version: v, Kind: rh.Kind}, Verbs: subresourceVerbs()})
				}
				if rh.Scale != nil {
					rl.APIResources = append(rl.APIResources, meta.APIResource{
						Name: rh.Plural + "/scale", Namespaced: rh.Namespaced, Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: subresourceVerbs()})
					res.Subresources = append(res.Subresources, meta.APISubresourceDiscovery{
						Subresource: "scale", ResponseKind: &meta.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, Verbs: subresourceVerbs()})
				}
				dv.Resources = append(dv.Resources, res)
			}
			b, err := json.Marshal(rl)
			if err != nil {
				return nil, err
			}
			d.versions[gv] = append(b, '\n')
			dg.Versions = append(dg.Versions, dv)
		}
		ag.PreferredVersion = ag.Versions[0]
		list.Groups = append(list.Groups, ag)
		v2.Items = append(v2.Items, dg)
		one := ag
		one.Kind, one.APIVersion = "APIGroup", "v1"
		b, err := json.Marshal(one)
		if err != nil {
			return nil, err
		}
		d.groups[g] = append(b, '\n')
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	d.groupList = append(b, '\n')
	if b, err = json.Marshal(v2); err != nil {
		return nil, err
	}
	d.v2 = append(b, '\n')
	d.v2ETag = meta.DiscoveryETag(b)
	v2.APIVersion = meta.DiscoveryGroupVersionV2Beta1
	if b, err = json.Marshal(v2); err != nil {
		return nil, err
	}
	d.v2beta1 = append(b, '\n')
	d.v2b1ETag = meta.DiscoveryETag(b)
	return d, nil
}

// serve answers a discovery path and reports whether the path was one.
func (d *discoveryDocs) serve(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	if p != "/apis" && !strings.HasPrefix(p, "/apis/") {
		return false
	}
	// Discovery paths have at most two segments after /apis: count them
	// before splitting, so that a resource path (every other request)
	// costs no allocation here.
	rest := strings.TrimPrefix(p, "/apis")
	if strings.Count(rest, "/") > 2 {
		return false
	}
	parts := strings.Split(rest, "/")[1:]
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		filters.WriteStatus(w, errNotFoundPath())
		return true
	}
	accept := r.Header.Get("Accept")
	var body []byte
	switch len(parts) {
	case 0:
		switch ct := meta.NegotiateAggregatedDiscovery(accept); {
		case ct != "":
			body, etag := d.v2, d.v2ETag
			if ct == meta.ContentTypeAggregatedDiscoveryV2Beta1 {
				body, etag = d.v2beta1, d.v2b1ETag
			}
			h := w.Header()
			h.Set("Vary", "Accept")
			h.Set("Cache-Control", "public")
			h.Set("ETag", etag)
			if r.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				return true
			}
			writeDoc(w, ct, body)
			return true
		case !negotiateJSON(accept, false):
			filters.WriteStatus(w, errNotAcceptable())
			return true
		}
		body = d.groupList
	case 1:
		body = d.groups[parts[0]]
	case 2:
		body = d.versions[parts[0]+"/"+parts[1]]
	}
	if body == nil {
		filters.WriteStatus(w, errNotFoundPath())
		return true
	}
	if !negotiateJSON(accept, false) {
		filters.WriteStatus(w, errNotAcceptable())
		return true
	}
	writeDoc(w, mediaJSON, body)
	return true
}

func writeDoc(w http.ResponseWriter, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
