// Package typed declares resources from Go types, with no code generation:
// the structural schema is derived from the struct, the strategy hooks take
// *T, and a computed resource returns T values that get their envelope
// filled in.
//
//	type Widget struct {
//		meta.TypeMeta   `json:",inline"`
//		meta.ObjectMeta `json:"metadata,omitempty"`
//		Spec            WidgetSpec   `json:"spec"`
//		Status          WidgetStatus `json:"status,omitempty"`
//	}
//	type WidgetSpec struct {
//		Color    string `json:"color" annex:"enum=red|green|blue" doc:"Color of the widget."`
//		Replicas int32  `json:"replicas,omitempty" annex:"minimum=0,maximum=10,default=1"`
//	}
//
//	res, err := typed.Stored[Widget]{
//		Group: "shop.example.com", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true,
//		StatusSubresource: true,
//		ValidateUpdate: func(ctx context.Context, w, old *Widget) field.ErrorList { ... },
//	}.Resource()
//
// # The schema from the struct
//
// Fields are named by their json tags; "-" skips a field, an embedded struct
// without a name (or with ",inline") is flattened into its parent, and a
// field without omitempty is required. Go types map as a CRD author would
// write them: strings, booleans, integers (format int32 or int64), floats
// (number), time.Time (string, date-time), []byte (string, byte), slices
// (array), maps with string keys (object with additionalProperties), pointers
// (their element, optional), any and json.RawMessage (any JSON,
// x-kubernetes-preserve-unknown-fields), Quantity (int-or-string with the
// quantity pattern, as k8s.io's resource.Quantity). A type with an OpenAPISchemaType
// method (and, optionally, OpenAPISchemaFormat), as k8s.io's Quantity has,
// says its own. The metadata field is "object" (the server validates
// ObjectMeta itself), and kind and apiVersion are strings.
//
// Validation markers are struct tags modelled on kubebuilder's markers:
// `annex:"minimum=0,maximum=10,minLength=1,maxLength=63,pattern=^[a-z]+$,
// enum=red|green|blue,format=hostname,default=1,minItems=1,maxItems=5,
// required,optional,nullable,preserveUnknownFields"`, and `doc:"..."` for the
// field's description (Go doc comments are not visible at run time). A
// value with a comma is not possible in a marker; use a schema.Props by hand
// for such a field.
//
// # Cost
//
// Reads never decode: GET, LIST and WATCH serve the stored bytes exactly as
// for an untyped resource. A write decodes into T only when a typed hook is
// set, once per hook call (a JSON round trip of the object).
package typed
