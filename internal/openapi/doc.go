// Package openapi derives the OpenAPI documents a Kubernetes API server
// serves (Swagger 2.0 at /openapi/v2, OpenAPI 3.0 at /openapi/v3 and per
// group version at /openapi/v3/apis/<group>/<version>) from plain
// descriptions of resources and their structural schemas, at run time, with
// no code generation.
//
// # Usage
//
//	docs, err := openapi.Build([]openapi.Resource{{
//		Group: "platform.example.com", Version: "v1alpha1",
//		Plural: "environments", Kind: "Environment", Namespaced: true,
//		Schema: s, // *schema.Props; nil means any object
//		PatchTypes: []string{"application/json-patch+json", "application/merge-patch+json"},
//	}})
//	// docs.V2, docs.V3Root, docs.V3["apis/platform.example.com/v1alpha1"]
//
// # Shapes
//
// The documents have the shapes kubectl and kube-aggregator read: paths with
// the {namespace} and {name} placeholders, x-kubernetes-group-version-kind as
// an object on operations and as an array on schemas, x-kubernetes-action on
// operations, the PATCH operation's accepted content types (which decide
// kubectl apply's patch type) and, when Resource.FieldValidation is set, the
// fieldValidation query parameter (which tells kubectl the server validates
// unknown fields). Definition names are those of CRDs: the reversed group,
// the version and the kind ("com.example.platform.v1alpha1.Environment").
//
// The v3 root lists one key per group version, "apis/<group>/<version>", with
// a serverRelativeURL whose hash parameter is the upper-case hex SHA-512 of
// that document, so it changes whenever the document does.
//
// This package is a leaf: it imports only the standard library and package
// schema. Package rest calls it and serves the bytes.
package openapi
