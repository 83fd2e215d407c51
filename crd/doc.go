// Package crd declares resources from apiextensions.k8s.io/v1
// CustomResourceDefinition manifests, the form platform teams already
// write: names (plural, singular, kind, listKind, shortNames, categories),
// scope, and for each served version its openAPIV3Schema (with its
// x-kubernetes-* extensions), additionalPrinterColumns, selectableFields,
// the status subresource, storage, deprecated and deprecationWarning, and
// the definition's conversion (None, or Webhook through package
// conversion) become one rest.Resource per served version.
//
// What a resource cannot honour yet is an error naming the field, never
// dropped: the scale subresource, an unserved storage version,
// preserveUnknownFields.
//
//	rs, err := crd.Resources(manifest) // YAML or JSON, one or more documents
//	b := annex.Builder{Resources: rs}
//
// Config.Converters puts Go conversion functions (rest.ConversionFuncs) in
// place of a definition's webhook.
package crd
