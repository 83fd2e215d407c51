package crd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/annexapi/annex/field"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/schema"
)

// definition is the part of a CustomResourceDefinition read here; any
// other field is refused.
type definition struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
	} `json:"metadata"`
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Plural     string   `json:"plural"`
			Singular   string   `json:"singular,omitempty"`
			Kind       string   `json:"kind"`
			ListKind   string   `json:"listKind,omitempty"`
			ShortNames []string `json:"shortNames,omitempty"`
			Categories []string `json:"categories,omitempty"`
		} `json:"names"`
		Scope                 string           `json:"scope"`
		Versions              []version        `json:"versions"`
		Conversion            *json.RawMessage `json:"conversion,omitempty"`
		PreserveUnknownFields bool             `json:"preserveUnknownFields,omitempty"`
	} `json:"spec"`
	Status json.RawMessage `json:"status,omitempty"`
}

type version struct {
	Name               string  `json:"name"`
	Served             bool    `json:"served"`
	Storage            bool    `json:"storage"`
	Deprecated         bool    `json:"deprecated,omitempty"`
	DeprecationWarning *string `json:"deprecationWarning,omitempty"`
	Schema             *struct {
		OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema"`
	} `json:"schema,omitempty"`
	Subresources *struct {
		Status *struct{}        `json:"status,omitempty"`
		Scale  *json.RawMessage `json:"scale,omitempty"`
	} `json:"subresources,omitempty"`
	AdditionalPrinterColumns []struct {
		Name        string `json:"name"`
		Type        string `json:"type"`
		Format      string `json:"format,omitempty"`
		Description string `json:"description,omitempty"`
		Priority    int32  `json:"priority,omitempty"`
		JSONPath    string `json:"jsonPath"`
	} `json:"additionalPrinterColumns,omitempty"`
	SelectableFields []struct {
		JSONPath string `json:"jsonPath"`
	} `json:"selectableFields,omitempty"`
}

// Resources declares the resources of every CustomResourceDefinition in
// manifest (YAML documents separated by "---", or JSON). Errors name the
// definition and the field.
func Resources(manifest []byte) ([]rest.Resource, error) {
	dec := yaml.NewDecoder(bytes.NewReader(manifest))
	var out []rest.Resource
	for i := 0; ; i++ {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if doc == nil {
			continue
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		r, err := resource(b)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, errors.New("no CustomResourceDefinition in the manifest")
	}
	return out, nil
}

func resource(doc []byte) (rest.Resource, error) {
	var d definition
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return rest.Resource{}, fmt.Errorf("not a CustomResourceDefinition this package reads: %v", err)
	}
	if d.APIVersion != "apiextensions.k8s.io/v1" || d.Kind != "CustomResourceDefinition" {
		return rest.Resource{}, fmt.Errorf("apiVersion %q, kind %q: want apiextensions.k8s.io/v1 CustomResourceDefinition", d.APIVersion, d.Kind)
	}
	spec := field.NewPath("spec")
	var errs field.ErrorList
	unsupported := func(p *field.Path, value any, why string) {
		errs = append(errs, field.Invalid(p, value, why))
	}
	if d.Spec.PreserveUnknownFields {
		unsupported(spec.Child("preserveUnknownFields"), true, "not supported: use x-kubernetes-preserve-unknown-fields in the schema")
	}
	var served []int
	for i, v := range d.Spec.Versions {
		if v.Served {
			served = append(served, i)
		}
	}
	if len(served) != 1 {
		unsupported(spec.Child("versions"), len(served), "exactly one served version is supported yet (several versions and conversion: issue 16)")
		return rest.Resource{}, fmt.Errorf("%s: %v", d.Metadata.Name, errs)
	}
	i := served[0]
	v := d.Spec.Versions[i]
	vp := spec.Child("versions").Index(i)
	if !v.Storage {
		unsupported(vp.Child("storage"), false, "the served version must be the storage version (conversion is not supported yet)")
	}
	if v.Deprecated || v.DeprecationWarning != nil {
		unsupported(vp.Child("deprecated"), v.Deprecated, "deprecated versions are not supported yet")
	}
	if d.Spec.Conversion != nil {
		var c struct {
			Strategy string `json:"strategy"`
		}
		_ = json.Unmarshal(*d.Spec.Conversion, &c)
		if c.Strategy != "" && c.Strategy != "None" {
			unsupported(spec.Child("conversion", "strategy"), c.Strategy, "conversion webhooks are not supported yet")
		}
	}
	if v.Subresources != nil && v.Subresources.Scale != nil {
		unsupported(vp.Child("subresources", "scale"), "{...}", "the scale subresource is not supported yet")
	}
	r := rest.Resource{
		Group: d.Spec.Group, Version: v.Name, Plural: d.Spec.Names.Plural, Singular: d.Spec.Names.Singular,
		Kind: d.Spec.Names.Kind, ListKind: d.Spec.Names.ListKind, ShortNames: d.Spec.Names.ShortNames,
		Categories:        d.Spec.Names.Categories,
		StatusSubresource: v.Subresources != nil && v.Subresources.Status != nil,
	}
	switch d.Spec.Scope {
	case "Namespaced":
		r.Namespaced = true
	case "Cluster":
	default:
		errs = append(errs, field.NotSupported(spec.Child("scope"), d.Spec.Scope, []string{"Cluster", "Namespaced"}))
	}
	if v.Schema == nil || len(v.Schema.OpenAPIV3Schema) == 0 {
		errs = append(errs, field.Required(vp.Child("schema", "openAPIV3Schema"), "schemas are required"))
	} else {
		p, err := schema.ParseJSON(v.Schema.OpenAPIV3Schema)
		if err != nil {
			unsupported(vp.Child("schema", "openAPIV3Schema"), "{...}", err.Error())
		} else {
			// The CRD's metadata node is replaced by ObjectMeta's: kube
			// serves metadata with its own schema.
			delete(p.Properties, "metadata")
			r.Schema = p
		}
	}
	for _, c := range v.AdditionalPrinterColumns {
		r.PrinterColumns = append(r.PrinterColumns, rest.PrinterColumn{Name: c.Name, Type: c.Type, Format: c.Format,
			Description: c.Description, Priority: c.Priority, JSONPath: c.JSONPath})
	}
	for _, f := range v.SelectableFields {
		r.Strategy.SelectableFields = append(r.Strategy.SelectableFields, strings.TrimPrefix(f.JSONPath, "."))
	}
	if len(errs) > 0 {
		return rest.Resource{}, fmt.Errorf("%s: %v", d.Metadata.Name, errs)
	}
	if want := d.Spec.Names.Plural + "." + d.Spec.Group; d.Metadata.Name != want {
		return rest.Resource{}, fmt.Errorf("%s: metadata.name: Invalid value: %q: must be spec.names.plural+\".\"+spec.group", d.Metadata.Name, d.Metadata.Name)
	}
	return r, nil
}
