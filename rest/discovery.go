// This file holds discovery: /apis (legacy APIGroupList, or the aggregated
// v2 APIGroupDiscoveryList when the Accept asks for it), /apis/<group>
// (APIGroup) and /apis/<group>/<version> (APIResourceList). Every document is
// encoded once, at NewHandler.

package rest

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/annexapi/annex/filters"
)

// verbs are the verbs every resource serves, sorted as k8s sorts them.
// patch is not served yet, so it is not advertised.
func verbs() []string {
	return []string{"create", "delete", "deletecollection", "get", "list", "update", "watch"}
}

// discoveryDocs are the encoded discovery documents.
type discoveryDocs struct {
	groupList []byte            // /apis, legacy
	v2        []byte            // /apis, aggregated
	v2ETag    string            // quoted
	groups    map[string][]byte // /apis/<g>
	versions  map[string][]byte // /apis/<g>/<v>
}

// storageVersionHash is base64(sha256("<group>/<version>/<Kind>")[:8]).
func storageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
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
	list := apiGroupList{Kind: "APIGroupList", APIVersion: "v1", Groups: []apiGroup{}}
	v2 := discoveryList{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2", Items: []discoveryGroup{}}
	for _, g := range groupOrder {
		ag := apiGroup{Name: g}
		dg := discoveryGroup{Metadata: discoveryObjectMeta{Name: g}}
		for _, v := range versionOrder[g] {
			gv := g + "/" + v
			ag.Versions = append(ag.Versions, groupVersionForDiscovery{GroupVersion: gv, Version: v})
			rl := apiResourceList{Kind: "APIResourceList", APIVersion: "v1", GroupVersion: gv, Resources: []apiResource{}}
			dv := discoveryVersion{Version: v, Resources: []discoveryResource{}, Freshness: "Current"}
			for _, rh := range byGV[gv] {
				rl.Resources = append(rl.Resources, apiResource{
					Name: rh.Plural, SingularName: rh.Singular, Namespaced: rh.Namespaced, Kind: rh.Kind,
					Verbs: verbs(), ShortNames: rh.ShortNames, Categories: rh.Categories,
					StorageVersionHash: storageVersionHash(rh.Group, rh.Version, rh.Kind),
				})
				scope := "Cluster"
				if rh.Namespaced {
					scope = "Namespaced"
				}
				dv.Resources = append(dv.Resources, discoveryResource{
					Resource: rh.Plural, ResponseKind: &discoveryGVK{Group: g, Version: v, Kind: rh.Kind},
					Scope: scope, SingularResource: rh.Singular, Verbs: verbs(),
					ShortNames: rh.ShortNames, Categories: rh.Categories,
				})
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
	d.v2ETag = fmt.Sprintf(`"%X"`, sha512.Sum512(b))
	return d, nil
}

// serve answers a discovery path and reports whether the path was one.
func (d *discoveryDocs) serve(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	if p != "/apis" && !strings.HasPrefix(p, "/apis/") {
		return false
	}
	parts := strings.Split(strings.TrimPrefix(p, "/apis"), "/")[1:]
	if len(parts) > 2 {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		filters.WriteStatus(w, errNotFoundPath())
		return true
	}
	accept := r.Header.Get("Accept")
	var body []byte
	switch len(parts) {
	case 0:
		switch negotiateDiscovery(accept) {
		case discoveryV2:
			h := w.Header()
			h.Set("Vary", "Accept")
			h.Set("Cache-Control", "public")
			h.Set("ETag", d.v2ETag)
			if r.Header.Get("If-None-Match") == d.v2ETag {
				w.WriteHeader(http.StatusNotModified)
				return true
			}
			writeDoc(w, discoveryV2ContentType, d.v2)
			return true
		case discoveryNone:
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
