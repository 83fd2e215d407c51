// Package crd declares resources from apiextensions.k8s.io/v1
// CustomResourceDefinition manifests, the form platform teams already
// write: names (plural, singular, kind, listKind, shortNames, categories),
// scope, the version's openAPIV3Schema (with its x-kubernetes-*
// extensions), additionalPrinterColumns, selectableFields and the status
// subresource become a rest.Resource.
//
// What a resource cannot honour yet is an error naming the field, never
// dropped: several served versions (and so conversion), the scale
// subresource, deprecated versions.
//
//	rs, err := crd.Resources(manifest) // YAML or JSON, one or more documents
//	b := annex.Builder{Resources: rs}
package crd
