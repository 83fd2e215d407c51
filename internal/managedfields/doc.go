// Package managedfields tracks who owns which field of an object, and merges
// server-side apply patches, as kube-apiserver does: metadata.managedFields
// in the FieldsV1 format, Apply and Update operations, conflicts worded as
// kube words them, the cap of ten update managers, the client-side apply
// upgrade for kubectl, and the status subresource's reset fields.
//
// The field sets, merges and conflicts are computed by
// sigs.k8s.io/structured-merge-diff, the engine kube-apiserver uses, with a
// schema derived from the resource's structural schema by the rules
// kube-apiserver applies to a CustomResourceDefinition (x-kubernetes-list-type,
// x-kubernetes-list-map-keys, x-kubernetes-map-type,
// x-kubernetes-preserve-unknown-fields, and ObjectMeta's own merge keys).
//
// Objects are the decoded JSON the rest package works on
// (map[string]any with json.Number numbers); a [Manager] reads and writes
// their metadata.managedFields in place.
//
//	m, err := managedfields.New(managedfields.Config{APIVersion: "platform.example.com/v1alpha1", Kind: "Environment", Schema: props})
//	err = m.Update(old, obj, "kubectl-edit", "")      // a PUT: obj gets its managedFields
//	merged, err := m.Apply(live, patch, "kubectl", false) // a server-side apply
package managedfields
