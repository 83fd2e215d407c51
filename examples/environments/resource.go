// This file declares the Environment resource: names, scope and the
// strategy that defaults and validates it.

package main

import (
	"context"
	_ "embed"

	"github.com/annexapi/annex/admission"
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
			SelectableFields: []string{"spec.owner", "spec.tier"},
		},
	}
}
