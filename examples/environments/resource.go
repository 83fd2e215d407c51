// This file declares the Environment resource from its CustomResourceDefinition
// (crd.yaml): two versions, the conversion functions between them, and the
// strategy that sets a new environment's phase.

package main

import (
	"context"
	_ "embed"
	"encoding/json"

	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/crd"
	"github.com/annexapi/annex/rest"
)

// crdYAML declares Environment at v1beta1 (storage, spec.owners) and
// v1alpha1 (spec.owner); kubectl explain prints its descriptions.
//
//go:embed crd.yaml
var crdYAML []byte

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

// ownersAnnotation keeps, on a v1alpha1 object, the owners after the first,
// which v1alpha1 cannot hold: a v1beta1 object read and written back at
// v1alpha1 keeps all its owners (the CRD convention).
const ownersAnnotation = "platform.example.com/owners"

// conversion converts v1alpha1 to and from v1beta1, the hub: spec.owner is
// the first of spec.owners. The hub is named, not left to be the storage
// version, so that the storage version can change without new functions.
func conversion() rest.ConversionFuncs {
	return rest.ConversionFuncs{Hub: "v1beta1", Funcs: map[string]rest.VersionConversion{
		"v1alpha1": {ToHub: ownerToOwners, FromHub: ownersToOwner},
	}}
}

// ownerToOwners is v1alpha1 → v1beta1.
func ownerToOwners(_ context.Context, obj rest.Object) error {
	spec, _ := obj["spec"].(map[string]any)
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if spec == nil {
		return nil
	}
	owner, has := spec["owner"]
	delete(spec, "owner")
	var owners []any
	if kept, ok := ann[ownersAnnotation].(string); ok {
		delete(ann, ownersAnnotation)
		if len(ann) == 0 {
			delete(md, "annotations")
		}
		// The kept list stands if its first is still the owner.
		if json.Unmarshal([]byte(kept), &owners) != nil || len(owners) == 0 || owners[0] != owner {
			owners = nil
		}
	}
	if owners == nil && has {
		owners = []any{owner}
	}
	if owners != nil {
		spec["owners"] = owners
	}
	return nil
}

// ownersToOwner is v1beta1 → v1alpha1.
func ownersToOwner(_ context.Context, obj rest.Object) error {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return nil
	}
	owners, _ := spec["owners"].([]any)
	delete(spec, "owners")
	if len(owners) == 0 {
		return nil
	}
	spec["owner"] = owners[0]
	if len(owners) > 1 {
		b, err := json.Marshal(owners)
		if err != nil {
			return err
		}
		md, _ := obj["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			obj["metadata"] = md
		}
		ann, _ := md["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
			md["annotations"] = ann
		}
		ann[ownersAnnotation] = string(b)
	}
	return nil
}

// Resources are the Environment's versions, v1beta1 first (preferred); their
// Storage is left to the Builder's default store.
func Resources() []rest.Resource {
	rs, err := crd.Config{Converters: map[string]rest.Converter{"environments.platform.example.com": conversion()}}.Resources(crdYAML)
	if err != nil {
		panic(err) // crd.yaml is part of the program
	}
	for i := range rs {
		rs[i].Strategy.PrepareForCreate = setPending
	}
	return rs
}

// setPending gives a new environment the phase Pending.
func setPending(_ context.Context, obj rest.Object) {
	status, _ := obj["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		obj["status"] = status
	}
	if status["phase"] == nil {
		status["phase"] = "Pending"
	}
}
