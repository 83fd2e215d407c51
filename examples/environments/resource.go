// This file declares the Environment resource: names, scope and the
// strategy that defaults and validates it.

package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/schema"
)

// schemaYAML is the Environment schema; kubectl explain prints its
// descriptions.
//
//go:embed schema.yaml
var schemaYAML string

// policiesYAML holds the example's admission policies: prod environments need
// an owner label (ValidatingAdmissionPolicy), and every environment gets the
// label managed-by=annex (MutatingAdmissionPolicy).
//
//go:embed policies.yaml
var policiesYAML []byte

// policies loads the admission policies declared in policies.yaml.
func policies() ([]admission.Mutator, []admission.Validator, error) {
	mp, err := admission.LoadMutatingPolicies(policiesYAML, admission.PolicyOptions{})
	if err != nil {
		return nil, nil, err
	}
	vp, err := admission.LoadValidatingPolicies(policiesYAML, admission.PolicyOptions{})
	if err != nil {
		return nil, nil, err
	}
	return []admission.Mutator{mp}, []admission.Validator{vp}, nil
}

// tiers are the supported values of spec.tier, sorted as k8s lists them.
func tiers() []string { return []string{"dev", "prod", "staging"} }

// Resource is the Environment declaration; its Storage is left to the
// Builder's default store.
func Resource() rest.Resource {
	return rest.Resource{
		Group:      "platform.example.com",
		Version:    "v1alpha1",
		Plural:     "environments",
		Kind:       "Environment",
		Namespaced: true,
		ShortNames: []string{"env"},
		Categories: []string{"all", "platform"},
		Schema:     schema.MustParseYAML(schemaYAML),
		PrinterColumns: []rest.PrinterColumn{
			{Name: "Tier", Type: "string", JSONPath: ".spec.tier", Description: "The kind of environment."},
			{Name: "Owner", Type: "string", JSONPath: ".spec.owner", Description: "The team accountable."},
			{Name: "Phase", Type: "string", JSONPath: ".status.phase"},
			{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas", Priority: 1},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		StatusSubresource: true,
		Strategy: rest.Strategy{
			PrepareForCreate: func(_ context.Context, obj rest.Object) {
				status, _ := obj["status"].(map[string]any)
				if status == nil {
					status = map[string]any{}
					obj["status"] = status
				}
				if status["phase"] == nil {
					status["phase"] = "Pending"
				}
			},
			ValidateCreate:   func(_ context.Context, obj rest.Object) []meta.StatusCause { return validate(obj) },
			ValidateUpdate:   func(_ context.Context, obj, _ rest.Object) []meta.StatusCause { return validate(obj) },
			SelectableFields: []string{"spec.owner", "spec.tier"},
		},
	}
}

// validate checks spec with the field errors kube-apiserver would word.
func validate(obj rest.Object) []meta.StatusCause {
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return []meta.StatusCause{{Type: meta.CauseTypeFieldValueRequired, Field: "spec", Message: "Required value"}}
	}
	var causes []meta.StatusCause
	if owner, _ := spec["owner"].(string); owner == "" {
		causes = append(causes, meta.StatusCause{Type: meta.CauseTypeFieldValueRequired, Field: "spec.owner", Message: "Required value"})
	}
	tier, _ := spec["tier"].(string)
	if !slices.Contains(tiers(), tier) {
		causes = append(causes, meta.StatusCause{Type: meta.CauseTypeFieldValueNotSupported, Field: "spec.tier",
			Message: fmt.Sprintf("Unsupported value: %q: supported values: \"dev\", \"prod\", \"staging\"", tier)})
	}
	if r, ok := spec["replicas"]; ok {
		num, _ := r.(json.Number)
		n, err := num.Int64()
		if err != nil {
			causes = append(causes, meta.StatusCause{Type: meta.CauseTypeFieldValueInvalid, Field: "spec.replicas",
				Message: fmt.Sprintf("Invalid value: %v: must be an integer", r)})
		} else if n < 0 {
			causes = append(causes, meta.StatusCause{Type: meta.CauseTypeFieldValueInvalid, Field: "spec.replicas",
				Message: fmt.Sprintf("Invalid value: %d: must be greater than or equal to 0", n)})
		}
	}
	return causes
}
