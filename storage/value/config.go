// This file holds kube-apiserver's EncryptionConfiguration
// (apiserver.config.k8s.io/v1, the --encryption-provider-config file):
// parsed, validated with kube's messages, and turned into a Transformer that
// routes each resource to its provider list.

package value

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/annexapi/annex/field"
	"github.com/annexapi/annex/storage"
)

// EncryptionConfiguration is apiserver.config.k8s.io/v1
// EncryptionConfiguration.
type EncryptionConfiguration struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	// Resources are the rules: which resources, and their providers (the
	// first encrypts, every one decrypts its own values).
	Resources []ResourceConfiguration `json:"resources"`
}

// ResourceConfiguration is one rule of an EncryptionConfiguration.
type ResourceConfiguration struct {
	// Resources are "<resource>.<group>" ("secrets" for the core group),
	// "*.<group>", "*." (the core group) or "*.*" (everything).
	Resources []string `json:"resources"`
	// Providers are the rule's providers, in order.
	Providers []ProviderConfiguration `json:"providers"`
}

// ProviderConfiguration is one provider: exactly one member is set.
type ProviderConfiguration struct {
	AESGCM    *KeysConfiguration `json:"aesgcm,omitempty"`
	AESCBC    *KeysConfiguration `json:"aescbc,omitempty"`
	Secretbox *KeysConfiguration `json:"secretbox,omitempty"`
	Identity  *struct{}          `json:"identity,omitempty"`
	// KMS is accepted in the file only to be refused with a reason: no KMS
	// plugin is supported here.
	KMS json.RawMessage `json:"kms,omitempty"`
}

// KeysConfiguration is a provider's keys: the first encrypts.
type KeysConfiguration struct {
	Keys []KeyConfiguration `json:"keys"`
}

// KeyConfiguration is one named key; Secret is base64.
type KeyConfiguration struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
}

// ParseEncryptionConfiguration reads an EncryptionConfiguration from YAML
// or JSON and checks it as kube-apiserver does (its messages), refusing
// what this server cannot honour (KMS) with a reason.
func ParseEncryptionConfiguration(data []byte) (*EncryptionConfiguration, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("error while parsing file: %v", err)
	}
	b, err := json.Marshal(doc) // go.yaml.in/yaml/v3 gives map[string]any for string keys
	if err != nil {
		return nil, fmt.Errorf("error while parsing file: %v", err)
	}
	var c EncryptionConfiguration
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("error decoding encryption provider configuration file: %v", err)
	}
	if c.Kind != "EncryptionConfiguration" || c.APIVersion != "apiserver.config.k8s.io/v1" {
		return nil, fmt.Errorf("got unexpected config type: apiVersion %q, kind %q (want apiserver.config.k8s.io/v1 EncryptionConfiguration)", c.APIVersion, c.Kind)
	}
	if errs := c.validate(); len(errs) > 0 {
		return nil, fmt.Errorf("error while validating encryption configuration: %v", errs)
	}
	return &c, nil
}

// kube's messages.
const (
	atLeastOneRequiredErrFmt = "at least one %s is required"
	keyLenErrFmt             = "secret is not of the expected length, got %d, expected one of %v"
	mandatoryFieldErrFmt     = "%s is a mandatory field for a %s"
	moreThanOneElementErr    = "more than one provider specified in a single element, should split into different list elements"
	starResourceErr          = "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
	overlapErr               = "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"
	resourceNameErr          = "resource name should not contain capital letters"
	resourceAcrossGroupErr   = "encrypting the same resource across groups is not supported"
	duplicateResourceErr     = "the same resource cannot be specified multiple times"
	kmsUnsupportedErr        = "KMS providers are not supported by this server: use aesgcm, aescbc, secretbox or identity"
)

func (c *EncryptionConfiguration) validate() field.ErrorList {
	root := field.NewPath("resources")
	var errs field.ErrorList
	if len(c.Resources) == 0 {
		return append(errs, field.Required(root, fmt.Sprintf(atLeastOneRequiredErrFmt, root)))
	}
	for i, rc := range c.Resources {
		r := root.Index(i).Child("resources")
		p := root.Index(i).Child("providers")
		if len(rc.Resources) == 0 {
			errs = append(errs, field.Required(r, fmt.Sprintf(atLeastOneRequiredErrFmt, r)))
		}
		errs = append(errs, validateOverlap(rc.Resources, r)...)
		errs = append(errs, validateResourceNames(rc.Resources, r)...)
		if len(rc.Providers) == 0 {
			errs = append(errs, field.Required(p, fmt.Sprintf(atLeastOneRequiredErrFmt, p)))
		}
		for j, pc := range rc.Providers {
			path := p.Index(j)
			n := 0
			for _, set := range []bool{pc.KMS != nil, pc.AESGCM != nil, pc.AESCBC != nil, pc.Secretbox != nil, pc.Identity != nil} {
				if set {
					n++
				}
			}
			switch {
			case n == 0:
				errs = append(errs, field.Invalid(path, "{}", "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"))
				continue
			case n > 1:
				errs = append(errs, field.Invalid(path, "{...}", moreThanOneElementErr))
				continue
			}
			switch {
			case pc.KMS != nil:
				errs = append(errs, field.Invalid(path.Child("kms"), "{...}", kmsUnsupportedErr))
			case pc.AESGCM != nil:
				errs = append(errs, validateKeys(pc.AESGCM.Keys, path.Child("aesgcm", "keys"), []int{16, 24, 32})...)
			case pc.AESCBC != nil:
				errs = append(errs, validateKeys(pc.AESCBC.Keys, path.Child("aescbc", "keys"), []int{16, 24, 32})...)
			case pc.Secretbox != nil:
				errs = append(errs, validateKeys(pc.Secretbox.Keys, path.Child("secretbox", "keys"), []int{32})...)
			}
		}
	}
	return errs
}

// groupResource splits "resource.group" at its first dot ("secrets" is
// the core group's).
func groupResource(s string) (group, resource string) {
	resource, group, _ = strings.Cut(s, ".")
	return group, resource
}

func validateOverlap(resources []string, path *field.Path) field.ErrorList {
	if len(resources) < 2 {
		return nil
	}
	var dup, overlap bool
	for i, a := range resources {
		ag, ar := groupResource(a)
		for j, b := range resources {
			if i == j {
				continue
			}
			bg, br := groupResource(b)
			switch {
			case a == b:
				dup = true
			case ag == "*" && ar == "*":
				overlap = true
			case ag == bg && (ar == "*" || br == "*"):
				overlap = true
			}
		}
	}
	var errs field.ErrorList
	if dup {
		errs = append(errs, field.Invalid(path, resources, duplicateResourceErr))
	}
	if overlap {
		errs = append(errs, field.Invalid(path, resources, overlapErr))
	}
	return errs
}

func validateResourceNames(resources []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j, res := range resources {
		p := path.Index(j)
		g, r := groupResource(res)
		switch {
		case strings.ToLower(res) != res:
			errs = append(errs, field.Invalid(p, res, resourceNameErr))
		case res == "*":
			errs = append(errs, field.Invalid(p, res, starResourceErr))
		case g == "*" && r != "*":
			errs = append(errs, field.Invalid(p, res, resourceAcrossGroupErr))
		}
	}
	return errs
}

func validateKeys(keys []KeyConfiguration, path *field.Path, sizes []int) field.ErrorList {
	if len(keys) == 0 {
		return field.ErrorList{field.Required(path, fmt.Sprintf(atLeastOneRequiredErrFmt, "keys"))}
	}
	var errs field.ErrorList
	for i, k := range keys {
		p := path.Index(i)
		if k.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), fmt.Sprintf(mandatoryFieldErrFmt, "name", "key")))
		}
		if k.Secret == "" {
			errs = append(errs, field.Required(p.Child("secret"), fmt.Sprintf(mandatoryFieldErrFmt, "secret", "key")))
			continue
		}
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("secret"), "REDACTED", "secrets must be base64 encoded"))
			continue
		}
		if !slices.Contains(sizes, len(secret)) {
			errs = append(errs, field.Invalid(p.Child("secret"), "REDACTED", fmt.Sprintf(keyLenErrFmt, len(secret), sizes)))
		}
	}
	return errs
}

// Transformer returns the configuration's transformer: each resource's
// values go through its rule's providers (the exact resource first, then
// "*.<group>", then "*.*", the first rule naming one winning, as in
// kube-apiserver); resources no rule names are stored as they are.
func (c *EncryptionConfiguration) Transformer() (Transformer, error) {
	var router Router
	seen := map[string]bool{}
	for i, rc := range c.Resources {
		var providers []PrefixTransformer
		for j, pc := range rc.Providers {
			ps, err := providerTransformers(pc)
			if err != nil {
				return nil, fmt.Errorf("resources[%d].providers[%d]: %w", i, j, err)
			}
			providers = append(providers, ps...)
		}
		t := NewPrefixTransformers(providers...)
		for _, res := range rc.Resources {
			prefix := resourcePrefix(res)
			if seen[prefix] {
				continue // an earlier rule has it
			}
			seen[prefix] = true
			router = append(router, Route{Prefix: prefix, Transformer: t})
		}
	}
	return router, nil
}

// resourcePrefix maps a configuration's resource to the storage key prefix
// of its objects (see storage.ResourcePrefix).
func resourcePrefix(res string) string {
	g, r := groupResource(res)
	switch {
	case g == "*" && r == "*":
		return "/"
	case r == "*":
		if g == "" {
			g = "core"
		}
		return "/" + g
	}
	return storage.ResourcePrefix(g, r, "")
}

func providerTransformers(pc ProviderConfiguration) ([]PrefixTransformer, error) {
	keyed := func(kc *KeysConfiguration, prefix func(string) []byte, mk func([]byte) (Transformer, error)) ([]PrefixTransformer, error) {
		var out []PrefixTransformer
		for _, k := range kc.Keys {
			secret, err := base64.StdEncoding.DecodeString(k.Secret)
			if err != nil {
				return nil, err
			}
			t, err := mk(secret)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k.Name, err)
			}
			out = append(out, PrefixTransformer{Prefix: prefix(k.Name), Transformer: t})
		}
		return out, nil
	}
	switch {
	case pc.AESGCM != nil:
		return keyed(pc.AESGCM, AESGCMPrefix, func(s []byte) (Transformer, error) { return NewAESGCMTransformer(s) })
	case pc.AESCBC != nil:
		return keyed(pc.AESCBC, AESCBCPrefix, func(s []byte) (Transformer, error) { return NewAESCBCTransformer(s) })
	case pc.Secretbox != nil:
		return keyed(pc.Secretbox, SecretboxPrefix, func(s []byte) (Transformer, error) { return NewSecretboxTransformer(s) })
	case pc.Identity != nil:
		return []PrefixTransformer{{Transformer: Identity{}}}, nil
	}
	return nil, fmt.Errorf("%s", kmsUnsupportedErr)
}
