// Package typed declares resources from Go types, with no code generation:
// the structural schema is derived from the struct, the strategy hooks take
// *T, a resource may be served at several versions each with its own Go
// type and typed conversion functions, and a computed resource returns T
// values that get their envelope filled in.
//
//	type Widget struct {
//		meta.TypeMeta   `json:",inline"`
//		meta.ObjectMeta `json:"metadata,omitempty"`
//		Spec            WidgetSpec   `json:"spec"`
//		Status          WidgetStatus `json:"status,omitempty"`
//	}
//	type WidgetSpec struct {
//		Color    string    `json:"color" annex:"enum=red|green|blue" doc:"Color of the widget."`
//		Replicas int32     `json:"replicas,omitempty" annex:"minimum=0,maximum=10,default=1"`
//		Size     string    `json:"size,omitempty" annex:"pattern='^[0-9]{1,3}(cm|in)$'"`
//		Tags     []string  `json:"tags,omitempty" cel:"rule='self.size() <= 3',message='three tags at most'"`
//	}
//	type WidgetStatus struct {
//		MadeAt *meta.Time `json:"madeAt,omitempty"`
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
// x-kubernetes-preserve-unknown-fields). The metadata field is "object" (the
// server validates ObjectMeta itself), and kind and apiVersion are strings.
//
// The value types objects embed have kube's schemas: meta.Time and
// meta.MicroTime are strings of format date-time (kubectl explain shows
// <string>, and a client sends "2024-05-01T12:00:00Z"), meta.Duration a
// string, Quantity and IntOrString an integer or a string
// (x-kubernetes-int-or-string; Quantity with the quantity pattern), and
// meta.Condition the object kube's CRD generators write for
// metav1.Condition. A type says its own schema as k8s.io's types do: with
// an OpenAPISchemaType method (and, optionally, OpenAPISchemaFormat), or an
// OpenAPIV3OneOfTypes method naming a string and a number, which is read as
// int-or-string; so k8s.io's own metav1.Time, resource.Quantity and
// intstr.IntOrString work too.
//
// # Markers, rules and descriptions
//
// Validation markers are struct tags modelled on kubebuilder's markers, a
// comma-separated list:
//
//	annex:"minimum=0,maximum=10,exclusiveMinimum=true,multipleOf=2,
//	       minLength=1,maxLength=63,pattern=^[a-z]+$,format=hostname,
//	       enum=red|green|blue,default=1,minItems=1,maxItems=5,
//	       minProperties=1,maxProperties=9,listType=set,listMapKeys=name,
//	       mapType=atomic,required,optional,nullable,preserveUnknownFields"
//
// A value with a comma is quoted in single quotes, with \' for a quote
// inside it (any other backslash is itself): pattern='^(a|b){1,3}$',
// default='{"days":7,"copies":2}'. A default or enum value is a string on a
// string field and JSON otherwise. A malformed tag makes SchemaOf fail with
// the field, the marker, what is wrong and how to write it (`annex marker
// "3}$" is unknown; a value with a comma must be quoted:
// pattern='^(a|b){1,3}$'`).
//
// CEL rules (x-kubernetes-validations) on a field are a cel tag in the same
// syntax: each rule= starts a rule, and the message=, messageExpression=,
// reason= (FieldValueInvalid, FieldValueForbidden, FieldValueRequired,
// FieldValueDuplicate), fieldPath= and optionalOldSelf= after it belong to
// it. Quote a rule that has a comma:
//
//	Targets []string `json:"targets" cel:"rule='self.all(t, self.exists_one(u, u == t))',message='targets must be unique'"`
//	Min     int      `json:"min" cel:"rule=self >= 0,rule='self <= 10',message='at most ten',reason=FieldValueForbidden"`
//
// Rules on every field of a type are a method of the type, which SchemaOf
// calls on its zero value (value or pointer receiver):
//
//	func (Window) ValidationRules() []schema.ValidationRule {
//		return []schema.ValidationRule{{Rule: "self.start <= self.end", Message: "start must not be after end"}}
//	}
//
// A field's description (kubectl explain) is its doc tag (Go doc comments
// are not visible at run time); a type's is its SchemaDescription() string
// method, used where the field has no doc tag.
//
// # Hooks
//
// PrepareForCreate and PrepareForUpdate get the object decoded into T; only
// what the hook changed is written back. T is encoded before and after the
// hook and the difference applied to the object the server holds: a member
// added or changed is set (objects member by member, recursively), a
// member removed is removed, a list of the same length is compared element
// by element and a list whose length changed is replaced whole. What T
// does not hold is left as the client sent it: a zero value omitempty
// drops (retentionDays: 0 reaches the schema's minimum, and is refused
// there), a null, a field T does not declare (under
// x-kubernetes-preserve-unknown-fields), a number in another spelling. A
// hook that sets an omitempty field to its zero value removes it.
//
// With any typed hook set, an object that does not decode into T (a string
// where T has a bool, 300 in an int8, -1 in a uint, a date T's time does not
// parse) is refused by the Validate wrapper of the write (create, update or
// status), in the words the schema's validation uses: `spec.paused:
// Invalid value: "string": spec.paused in body must be of type boolean:
// "string"`, `Invalid value: 300: spec.small in body should be less than
// or equal to 127`. No hook sees such an object: the Prepare hook is
// skipped and the request fails. When the schema already reports the same
// error, the server lists it once.
//
// # Versions
//
// Versions serves one stored resource at several versions, each a Go type,
// hub and spoke: the hub's type is the one every other converts through,
// with two typed functions per spoke, and StorageVersion names the version
// objects are stored at.
//
//	rs, err := typed.Versions[v2.BackupPolicy]{
//		Group: "backup.example.com", Plural: "backuppolicies", Kind: "BackupPolicy", Namespaced: true,
//		Hub: typed.Stored[v2.BackupPolicy]{Version: "v2", StatusSubresource: true},
//		Spokes: []typed.Spoke[v2.BackupPolicy]{
//			typed.SpokeOf(typed.Stored[v1.BackupPolicy]{Version: "v1", StatusSubresource: true}, v1ToV2, v2ToV1),
//		},
//		StorageVersion: "v2",
//	}.Resources()
//
// where v1ToV2 is a func(*v1.BackupPolicy) (*v2.BackupPolicy, error) and
// v2ToV1 the reverse. Conversion functions move fields; the server keeps
// kind, apiVersion and metadata (labels and annotations excepted, see
// SpokeOf). typed/example_versions_test.go is a whole server of this kind,
// driven by kubectl in typed/kubectl_test.go.
//
// # Cost
//
// Reads never decode: GET, LIST and WATCH serve the stored bytes exactly as
// for an untyped resource. A write decodes into T only when a typed hook is
// set: a JSON round trip per hook call, and for a Prepare hook two
// encodings of T and a scan of the members that differ
// (BenchmarkTypedHooks). Reading an object at a version other than the
// stored one converts it through both Go types, once per object and
// revision (the server caches conversions).
package typed
