// This file holds what rest needs from package meta that has not landed there
// yet: ObjectMeta validation on generic JSON and the discovery documents.
// Delete each piece once meta provides it.

package rest

import (
	"github.com/annexapi/annex/meta"
)

// validateObjectMeta checks metadata as k8s.io/apimachinery's
// ValidateObjectMeta does for name, generateName and namespace.
func validateObjectMeta(md Object, namespaced bool) []meta.StatusCause {
	var causes []meta.StatusCause
	name, _ := md["name"].(string)
	gen, _ := md["generateName"].(string)
	if gen != "" {
		for _, msg := range meta.NameIsDNSSubdomain(gen, true) {
			causes = append(causes, fieldInvalid("metadata.generateName", gen, msg))
		}
	}
	if name == "" {
		causes = append(causes, fieldRequired("metadata.name", "name or generateName is required"))
	} else {
		for _, msg := range meta.NameIsDNSSubdomain(name, false) {
			causes = append(causes, fieldInvalid("metadata.name", name, msg))
		}
	}
	ns, _ := md["namespace"].(string)
	if namespaced {
		if ns == "" {
			causes = append(causes, fieldRequired("metadata.namespace", ""))
		} else {
			for _, msg := range meta.IsDNS1123Label(ns) {
				causes = append(causes, fieldInvalid("metadata.namespace", ns, msg))
			}
		}
	} else if ns != "" {
		causes = append(causes, fieldForbidden("metadata.namespace", "not allowed on this type"))
	}
	if labels, ok := md["labels"].(map[string]any); ok {
		for k, v := range labels {
			for _, msg := range meta.IsQualifiedName(k) {
				causes = append(causes, fieldInvalid("metadata.labels", k, msg))
			}
			s, isString := v.(string)
			if !isString {
				continue
			}
			for _, msg := range meta.IsValidLabelValue(s) {
				causes = append(causes, fieldInvalid("metadata.labels", s, msg))
			}
		}
	}
	return causes
}

// Discovery documents (apimachinery pkg/apis/meta/v1 and apidiscovery/v2).

type groupVersionForDiscovery struct {
	GroupVersion string `json:"groupVersion"`
	Version      string `json:"version"`
}

type apiGroup struct {
	Kind             string                     `json:"kind,omitempty"`
	APIVersion       string                     `json:"apiVersion,omitempty"`
	Name             string                     `json:"name"`
	Versions         []groupVersionForDiscovery `json:"versions"`
	PreferredVersion groupVersionForDiscovery   `json:"preferredVersion"`
}

type apiGroupList struct {
	Kind       string     `json:"kind"`
	APIVersion string     `json:"apiVersion"`
	Groups     []apiGroup `json:"groups"`
}

type apiResource struct {
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

type apiResourceList struct {
	Kind         string        `json:"kind"`
	APIVersion   string        `json:"apiVersion"`
	GroupVersion string        `json:"groupVersion"`
	Resources    []apiResource `json:"resources"`
}

type discoveryGVK struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

type discoveryResource struct {
	Resource         string        `json:"resource"`
	ResponseKind     *discoveryGVK `json:"responseKind"`
	Scope            string        `json:"scope"`
	SingularResource string        `json:"singularResource"`
	Verbs            []string      `json:"verbs"`
	ShortNames       []string      `json:"shortNames,omitempty"`
	Categories       []string      `json:"categories,omitempty"`
}

type discoveryVersion struct {
	Version   string              `json:"version"`
	Resources []discoveryResource `json:"resources"`
	Freshness string              `json:"freshness,omitempty"`
}

type discoveryObjectMeta struct {
	Name              string  `json:"name"`
	CreationTimestamp *string `json:"creationTimestamp"`
}

type discoveryGroup struct {
	Metadata discoveryObjectMeta `json:"metadata"`
	Versions []discoveryVersion  `json:"versions"`
}

type discoveryList struct {
	Kind       string           `json:"kind"`
	APIVersion string           `json:"apiVersion"`
	Metadata   struct{}         `json:"metadata"`
	Items      []discoveryGroup `json:"items"`
}
