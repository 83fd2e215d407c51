package crd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/annexapi/annex/conversion"
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
		Status *struct{} `json:"status,omitempty"`
		Scale  *struct {
			SpecReplicasPath   string  `json:"specReplicasPath"`
			StatusReplicasPath string  `json:"statusReplicasPath"`
			LabelSelectorPath  *string `json:"labelSelectorPath,omitempty"`
		} `json:"scale,omitempty"`
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

// Config configures Resources. The zero value reads manifests as they are.
type Config struct {
	// Converters replace the conversion of the named definitions
	// (plural.group): Go functions (rest.ConversionFuncs) in place of the
	// manifest's None or Webhook strategy, for a server that converts in
	// process.
	Converters map[string]rest.Converter
	// ResolveService turns a conversion webhook's service into a base URL;
	// nil means https://<name>.<namespace>.svc:<port>.
	ResolveService func(conversion.ServiceReference) (*url.URL, error)
}

// Resources declares the resources of every CustomResourceDefinition in
// manifest (YAML documents separated by "---", or JSON): one rest.Resource
// per served version, in the order kube's discovery lists them (see
// rest.CompareVersions), so the first is the preferred version. Errors name
// the definition and the field.
func Resources(manifest []byte) ([]rest.Resource, error) { return Config{}.Resources(manifest) }

// Resources is the package's Resources with c's settings.
func (c Config) Resources(manifest []byte) ([]rest.Resource, error) {
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
		rs, err := c.resources(b)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, rs...)
	}
	if len(out) == 0 {
		return nil, errors.New("no CustomResourceDefinition in the manifest")
	}
	// A converter for a definition the manifest does not have would be
	// silently unused (a misspelt name): refuse it.
	for name := range c.Converters {
		if !slices.ContainsFunc(out, func(r rest.Resource) bool { return r.Plural+"."+r.Group == name }) {
			return nil, fmt.Errorf("Converters: no CustomResourceDefinition named %q in the manifest", name)
		}
	}
	return out, nil
}

// conversionSpec is a definition's spec.conversion.
type conversionSpec struct {
	Strategy string `json:"strategy"`
	Webhook  *struct {
		ClientConfig *struct {
			URL      *string                      `json:"url,omitempty"`
			Service  *conversion.ServiceReference `json:"service,omitempty"`
			CABundle []byte                       `json:"caBundle,omitempty"`
		} `json:"clientConfig,omitempty"`
		ConversionReviewVersions []string `json:"conversionReviewVersions"`
	} `json:"webhook,omitempty"`
}

func (c Config) resources(doc []byte) ([]rest.Resource, error) {
	var d definition
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("not a CustomResourceDefinition this package reads: %v", err)
	}
	if d.APIVersion != "apiextensions.k8s.io/v1" || d.Kind != "CustomResourceDefinition" {
		return nil, fmt.Errorf("apiVersion %q, kind %q: want apiextensions.k8s.io/v1 CustomResourceDefinition", d.APIVersion, d.Kind)
	}
	spec := field.NewPath("spec")
	var errs field.ErrorList
	unsupported := func(p *field.Path, value any, why string) {
		errs = append(errs, field.Invalid(p, value, why))
	}
	if d.Spec.PreserveUnknownFields {
		unsupported(spec.Child("preserveUnknownFields"), true, "not supported: use x-kubernetes-preserve-unknown-fields in the schema")
	}
	namespaced := false
	switch d.Spec.Scope {
	case "Namespaced":
		namespaced = true
	case "Cluster":
	default:
		errs = append(errs, field.NotSupported(spec.Child("scope"), d.Spec.Scope, []string{"Cluster", "Namespaced"}))
	}
	storageVersions := 0
	var out []rest.Resource
	for i, v := range d.Spec.Versions {
		vp := spec.Child("versions").Index(i)
		if v.Storage {
			storageVersions++
			if !v.Served {
				unsupported(vp.Child("served"), false, "the storage version must be served here")
			}
		}
		if !v.Served {
			continue
		}
		r, verrs := declareVersion(v, vp)
		errs = append(errs, verrs...)
		r.Group, r.Plural, r.Singular = d.Spec.Group, d.Spec.Names.Plural, d.Spec.Names.Singular
		r.Kind, r.ListKind, r.ShortNames = d.Spec.Names.Kind, d.Spec.Names.ListKind, d.Spec.Names.ShortNames
		r.Categories, r.Namespaced = d.Spec.Names.Categories, namespaced
		out = append(out, r)
	}
	if storageVersions != 1 {
		unsupported(spec.Child("versions"), storageVersions, "must have exactly one version marked as storage version")
	}
	conv, cerrs := c.converter(d.Metadata.Name, d.Spec.Conversion, spec.Child("conversion"))
	errs = append(errs, cerrs...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %v", d.Metadata.Name, errs)
	}
	if want := d.Spec.Names.Plural + "." + d.Spec.Group; d.Metadata.Name != want {
		return nil, fmt.Errorf("%s: metadata.name: Invalid value: %q: must be spec.names.plural+\".\"+spec.group", d.Metadata.Name, d.Metadata.Name)
	}
	for i := range out {
		if out[i].StorageVersion {
			out[i].Conversion = conv
		}
	}
	slices.SortStableFunc(out, func(a, b rest.Resource) int { return rest.CompareVersions(b.Version, a.Version) })
	return out, nil
}

// declareVersion declares one served version.
func declareVersion(v version, vp *field.Path) (rest.Resource, field.ErrorList) {
	var errs field.ErrorList
	r := rest.Resource{
		Version: v.Name, StorageVersion: v.Storage, Deprecated: v.Deprecated,
		StatusSubresource: v.Subresources != nil && v.Subresources.Status != nil,
	}
	if v.DeprecationWarning != nil {
		if !v.Deprecated {
			errs = append(errs, field.Invalid(vp.Child("deprecationWarning"), *v.DeprecationWarning, "can only be set for deprecated versions"))
		}
		r.DeprecationWarning = *v.DeprecationWarning
	}
	if v.Subresources != nil && v.Subresources.Scale != nil {
		sc := v.Subresources.Scale
		sp := vp.Child("subresources", "scale")
		if sc.SpecReplicasPath == "" {
			errs = append(errs, field.Required(sp.Child("specReplicasPath"), ""))
		}
		if sc.StatusReplicasPath == "" {
			errs = append(errs, field.Required(sp.Child("statusReplicasPath"), ""))
		}
		r.Scale = &rest.Scale{SpecReplicasPath: sc.SpecReplicasPath, StatusReplicasPath: sc.StatusReplicasPath}
		if sc.LabelSelectorPath != nil {
			r.Scale.LabelSelectorPath = *sc.LabelSelectorPath
		}
	}
	if v.Schema == nil || len(v.Schema.OpenAPIV3Schema) == 0 {
		errs = append(errs, field.Required(vp.Child("schema", "openAPIV3Schema"), "schemas are required"))
	} else {
		p, err := schema.ParseJSON(v.Schema.OpenAPIV3Schema)
		if err != nil {
			errs = append(errs, field.Invalid(vp.Child("schema", "openAPIV3Schema"), "{...}", err.Error()))
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
	return r, errs
}

// converter returns the conversion of a definition: Config.Converters',
// else None (nil) or the webhook the manifest names.
func (c Config) converter(name string, raw *json.RawMessage, p *field.Path) (rest.Converter, field.ErrorList) {
	var cs conversionSpec
	if raw != nil {
		dec := json.NewDecoder(bytes.NewReader(*raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cs); err != nil {
			return nil, field.ErrorList{field.Invalid(p, "{...}", err.Error())}
		}
	}
	if conv, ok := c.Converters[name]; ok {
		return conv, nil
	}
	switch cs.Strategy {
	case "", "None":
		if cs.Webhook != nil {
			return nil, field.ErrorList{field.Forbidden(p.Child("webhook"), "should not be set when strategy is not set to Webhook")}
		}
		return nil, nil
	case "Webhook":
	default:
		return nil, field.ErrorList{field.NotSupported(p.Child("strategy"), cs.Strategy, []string{"None", "Webhook"})}
	}
	wp := p.Child("webhook")
	if cs.Webhook == nil || cs.Webhook.ClientConfig == nil {
		return nil, field.ErrorList{field.Required(wp.Child("clientConfig"), "required when strategy is set to Webhook")}
	}
	if len(cs.Webhook.ConversionReviewVersions) == 0 {
		return nil, field.ErrorList{field.Required(wp.Child("conversionReviewVersions"), "must include at least one of v1, v1beta1")}
	}
	cc := cs.Webhook.ClientConfig
	cfg := conversion.WebhookConfig{Name: name, Service: cc.Service, CABundle: cc.CABundle,
		ConversionReviewVersions: cs.Webhook.ConversionReviewVersions, ResolveService: c.ResolveService}
	if cc.URL != nil {
		cfg.URL = *cc.URL
	}
	hook, err := conversion.NewWebhook(cfg)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(wp.Child("clientConfig"), "{...}", err.Error())}
	}
	return hook, nil
}
