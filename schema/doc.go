// Package schema is the structural schema a resource declares: the OpenAPI v3
// subset with Kubernetes extensions that CustomResourceDefinitions use
// (JSONSchemaProps), as plain data.
//
// It is a leaf shared by the stages that need a resource's shape: the REST
// layer derives OpenAPI documents and field-validation (unknown fields) from
// it, admission compiles validation, defaulting and CEL rules from it. It
// holds no behaviour beyond parsing and structural checks, so those packages
// meet here without importing each other.
//
// # Usage
//
//	s, err := schema.ParseYAML([]byte(`
//	type: object
//	properties:
//	  spec:
//	    type: object
//	    required: [owner]
//	    properties:
//	      owner: {type: string}
//	      tier: {type: string, enum: [dev, staging, prod], default: dev}
//	`))
//
// A schema is the one of the whole object (apiVersion, kind and metadata may
// be left out: consumers add them). Field names and meanings are those of
// apiextensions.k8s.io/v1 JSONSchemaProps, so a CRD's openAPIV3Schema can be
// pasted in.
package schema
