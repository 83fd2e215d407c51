// This file holds the discovery documents: legacy (/api, /apis, /apis/<g>,
// /apis/<g>/<v>, JSON names from k8s.io/apimachinery/pkg/apis/meta/v1) and
// aggregated discovery (apidiscovery.k8s.io/v2, from k8s.io/api/apidiscovery),
// with the media types a server must recognise in Accept and answer with.

package meta

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
)

// APIVersions is the document at /api (core group versions).
type APIVersions struct {
	TypeMeta                   `json:",inline"`
	Versions                   []string                    `json:"versions"`
	ServerAddressByClientCIDRs []ServerAddressByClientCIDR `json:"serverAddressByClientCIDRs"`
}

// ServerAddressByClientCIDR tells clients in a CIDR which address to use.
type ServerAddressByClientCIDR struct {
	ClientCIDR    string `json:"clientCIDR"`
	ServerAddress string `json:"serverAddress"`
}

// APIGroupList is the document at /apis: kind APIGroupList, apiVersion v1.
type APIGroupList struct {
	TypeMeta `json:",inline"`
	Groups   []APIGroup `json:"groups"`
}

// APIGroup is the document at /apis/<group> and an entry of APIGroupList
// (entries carry no kind/apiVersion).
type APIGroup struct {
	TypeMeta                   `json:",inline"`
	Name                       string                      `json:"name"`
	Versions                   []GroupVersionForDiscovery  `json:"versions"`
	PreferredVersion           GroupVersionForDiscovery    `json:"preferredVersion"`
	ServerAddressByClientCIDRs []ServerAddressByClientCIDR `json:"serverAddressByClientCIDRs,omitempty"`
}

// GroupVersionForDiscovery names one version of a group:
// {"groupVersion":"g/v","version":"v"}.
type GroupVersionForDiscovery struct {
	GroupVersion string `json:"groupVersion"`
	Version      string `json:"version"`
}

// APIResourceList is the document at /apis/<group>/<version>; the aggregator's
// availability probe and its legacy discovery fallback read it.
type APIResourceList struct {
	TypeMeta     `json:",inline"`
	GroupVersion string        `json:"groupVersion"`
	APIResources []APIResource `json:"resources"`
}

// APIResource describes one resource or subresource ("res/sub") of a group
// version. name, singularName, namespaced, kind and verbs are always written
// (subresources have singularName ""); Group and Version only when they
// differ from the list's (as for scale → autoscaling/v1). Verbs should be
// sorted and non-nil.
type APIResource struct {
	Name               string   `json:"name"`
	SingularName       string   `json:"singularName"`
	Namespaced         bool     `json:"namespaced"`
	Group              string   `json:"group,omitempty"`
	Version            string   `json:"version,omitempty"`
	Kind               string   `json:"kind"`
	Verbs              []string `json:"verbs"`
	ShortNames         []string `json:"shortNames,omitempty"`
	Categories         []string `json:"categories,omitempty"`
	StorageVersionHash string   `json:"storageVersionHash,omitempty"`
}

// StorageVersionHash is the storageVersionHash of a resource stored as
// group/version, Kind: base64 of the first 8 bytes of sha256("g/v/Kind").
func StorageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// Aggregated discovery constants.
const (
	DiscoveryGroup               = "apidiscovery.k8s.io"
	DiscoveryGroupVersionV2      = "apidiscovery.k8s.io/v2"
	DiscoveryGroupVersionV2Beta1 = "apidiscovery.k8s.io/v2beta1"
	KindAPIGroupDiscoveryList    = "APIGroupDiscoveryList"

	// ContentTypeAggregatedDiscoveryV2 is the Content-Type of a v2 aggregated
	// discovery response. Clients and kube-aggregator decide the body's
	// format from it, so a v2 body under plain application/json is misread.
	ContentTypeAggregatedDiscoveryV2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	// ContentTypeAggregatedDiscoveryV2Beta1 is the same for v2beta1, which
	// kube-aggregator 1.32-1.35 and client-go up to 1.33 still list second.
	ContentTypeAggregatedDiscoveryV2Beta1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
)

// ResourceScope is the scope of a resource in aggregated discovery.
type ResourceScope string

// The scopes.
const (
	ScopeCluster   ResourceScope = "Cluster"
	ScopeNamespace ResourceScope = "Namespaced"
)

// DiscoveryFreshness says whether a group version's entry is up to date; a
// Stale one is a failed group version for client-go.
type DiscoveryFreshness string

// The freshness values.
const (
	DiscoveryFreshnessCurrent DiscoveryFreshness = "Current"
	DiscoveryFreshnessStale   DiscoveryFreshness = "Stale"
)

// GroupVersionKind is {"group","version","kind"}, all always written.
type GroupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// APIGroupDiscoveryList is the aggregated discovery document at /apis (and
// /api): kind APIGroupDiscoveryList, apiVersion apidiscovery.k8s.io/v2,
// metadata {}. Items must be non-nil to be written as [].
type APIGroupDiscoveryList struct {
	TypeMeta `json:",inline"`
	Metadata ListMeta            `json:"metadata"`
	Items    []APIGroupDiscovery `json:"items"`
}

// APIGroupDiscovery is one group; Metadata.Name is the group name, and
// metadata is written as {"name":..,"creationTimestamp":null} as k8s does.
// Versions are in preference order.
type APIGroupDiscovery struct {
	TypeMeta `json:",inline"`
	Metadata ObjectMeta            `json:"metadata"`
	Versions []APIVersionDiscovery `json:"versions,omitempty"`
}

// APIVersionDiscovery is one version of a group.
type APIVersionDiscovery struct {
	Version   string                 `json:"version"`
	Resources []APIResourceDiscovery `json:"resources,omitempty"`
	Freshness DiscoveryFreshness     `json:"freshness,omitempty"`
}

// APIResourceDiscovery is one resource. A resource without ResponseKind is
// dropped by client-go. resource, scope, singularResource and verbs are
// always written.
type APIResourceDiscovery struct {
	Resource         string                    `json:"resource"`
	ResponseKind     *GroupVersionKind         `json:"responseKind,omitempty"`
	Scope            ResourceScope             `json:"scope"`
	SingularResource string                    `json:"singularResource"`
	Verbs            []string                  `json:"verbs"`
	ShortNames       []string                  `json:"shortNames,omitempty"`
	Categories       []string                  `json:"categories,omitempty"`
	Subresources     []APISubresourceDiscovery `json:"subresources,omitempty"`
}

// APISubresourceDiscovery is one subresource of a resource.
type APISubresourceDiscovery struct {
	Subresource   string             `json:"subresource"`
	ResponseKind  *GroupVersionKind  `json:"responseKind,omitempty"`
	AcceptedTypes []GroupVersionKind `json:"acceptedTypes,omitempty"`
	Verbs         []string           `json:"verbs"`
}

// DiscoveryETag is the quoted ETag k8s sends with aggregated discovery: the
// uppercase hex SHA-512 of the JSON body.
func DiscoveryETag(body []byte) string {
	sum := sha512.Sum512(body)
	return `"` + strings.ToUpper(hex.EncodeToString(sum[:])) + `"`
}

// NegotiateAggregatedDiscovery reads an Accept header and returns the
// aggregated discovery Content-Type to answer with
// (ContentTypeAggregatedDiscoveryV2 or ...V2Beta1), or "" when the client
// did not ask for aggregated discovery and gets the legacy document. The
// clause with the highest q wins, the first on a tie; a clause is an
// aggregated discovery request when its type is application/json (or */*,
// application/*) and its parameters are g=apidiscovery.k8s.io,
// as=APIGroupDiscoveryList and v=v2 or v2beta1, in any order. A clause that
// accepts plain JSON at a higher q than any aggregated clause means legacy.
func NegotiateAggregatedDiscovery(accept string) string {
	best, bestQ := "", -1.0
	for _, clause := range strings.Split(accept, ",") {
		ct, q, ok := discoveryClause(clause)
		if !ok || q <= 0 || q <= bestQ {
			continue
		}
		best, bestQ = ct, q
	}
	return best
}

// discoveryClause parses one Accept clause; ct is "" for a clause that
// accepts legacy JSON, ok is false for a clause that accepts neither.
func discoveryClause(clause string) (ct string, q float64, ok bool) {
	parts := strings.Split(clause, ";")
	mt := strings.ToLower(strings.TrimSpace(parts[0]))
	if mt != "application/json" && mt != "*/*" && mt != "application/*" {
		return "", 0, false
	}
	q = 1
	var g, v, as string
	for _, p := range parts[1:] {
		k, val, _ := strings.Cut(p, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		val = strings.Trim(strings.TrimSpace(val), `"`)
		switch k {
		case "g":
			g = val
		case "v":
			v = val
		case "as":
			as = val
		case "q":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return "", 0, false
			}
			q = f
		}
	}
	if g == "" && v == "" && as == "" {
		return "", q, true
	}
	if g != DiscoveryGroup || as != KindAPIGroupDiscoveryList {
		return "", 0, false // a transform we do not serve here
	}
	switch v {
	case "v2":
		return ContentTypeAggregatedDiscoveryV2, q, true
	case "v2beta1":
		return ContentTypeAggregatedDiscoveryV2Beta1, q, true
	}
	return "", 0, false
}
