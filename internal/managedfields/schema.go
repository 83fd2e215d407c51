// This file derives the structured-merge-diff schema of a resource from its
// structural schema, by the rules kube-apiserver uses for a
// CustomResourceDefinition (the CRD's OpenAPI v3 with ObjectMeta in place of
// metadata, converted as k8s.io/kube-openapi's schemaconv converts it).

package managedfields

import (
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"github.com/annexapi/annex/schema"
)

// Names of the schema's types.
const (
	rootType       = "annex.object"
	objectMetaType = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	ownerRefType   = "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference"
	untypedType    = "__untyped_atomic_"
	deducedType    = "__untyped_deduced_"
)

func ptr[T any](v T) *T { return &v }

func named(n string) smdschema.TypeRef { return smdschema.TypeRef{NamedType: ptr(n)} }

func scalar(s smdschema.Scalar) smdschema.TypeRef {
	return smdschema.TypeRef{Inlined: smdschema.Atom{Scalar: ptr(s)}}
}

// buildSchema returns the schema of objects described by p (nil: any
// object), whose root type is rootType.
func buildSchema(p *schema.Props) *smdschema.Schema {
	var root smdschema.Atom
	if p == nil {
		root = smdschema.Atom{Map: &smdschema.Map{ElementType: named(deducedType)}}
	} else {
		root = convert(p, false)
	}
	if root.Map == nil {
		root.Map = &smdschema.Map{}
	}
	root.Map = withTypeMeta(root.Map)
	s := &smdschema.Schema{Types: []smdschema.TypeDef{{Name: rootType, Atom: root}}}
	s.Types = append(s.Types, commonTypes()...)
	return s
}

// withTypeMeta sets apiVersion and kind as strings and metadata as
// ObjectMeta, as the CRD OpenAPI builder does at the root and in embedded
// resources.
func withTypeMeta(m *smdschema.Map) *smdschema.Map {
	out := &smdschema.Map{ElementType: m.ElementType, ElementRelationship: m.ElementRelationship, Unions: m.Unions}
	for _, f := range m.Fields {
		if f.Name != "apiVersion" && f.Name != "kind" && f.Name != "metadata" {
			out.Fields = append(out.Fields, f)
		}
	}
	out.Fields = append(out.Fields,
		smdschema.StructField{Name: "apiVersion", Type: scalar(smdschema.String)},
		smdschema.StructField{Name: "kind", Type: scalar(smdschema.String)},
		smdschema.StructField{Name: "metadata", Type: named(objectMetaType)})
	return out
}

// convert is schemaconv's parseSchema: preserve, once set by
// x-kubernetes-preserve-unknown-fields, holds for every node below.
func convert(p *schema.Props, preserve bool) smdschema.Atom {
	if p.XPreserveUnknownFields != nil && *p.XPreserveUnknownFields {
		preserve = true
	}
	var a smdschema.Atom
	switch p.Type {
	case "":
		a = smdschema.Atom{Scalar: ptr(smdschema.Scalar("untyped")), List: convertList(p, preserve), Map: convertObject(p, preserve)}
	case "object":
		a = smdschema.Atom{Map: convertObject(p, preserve)}
	case "array":
		a = smdschema.Atom{List: convertList(p, preserve)}
	case "integer", "number":
		a = smdschema.Atom{Scalar: ptr(smdschema.Numeric)}
	case "boolean":
		a = smdschema.Atom{Scalar: ptr(smdschema.Boolean)}
	case "string":
		if p.Format == "" || p.Format == "byte" {
			a = smdschema.Atom{Scalar: ptr(smdschema.String)}
		} else {
			a = smdschema.Atom{Scalar: ptr(smdschema.Scalar("untyped"))}
		}
	default:
		a = smdschema.Atom{Scalar: ptr(smdschema.Scalar("untyped"))}
	}
	if p.XEmbeddedResource && a.Map != nil {
		a.Map = withTypeMeta(a.Map)
	}
	return a
}

func convertObject(p *schema.Props, preserve bool) *smdschema.Map {
	m := &smdschema.Map{ElementRelationship: mapRelationship(p.XMapType)}
	for name, member := range p.Properties {
		m.Fields = append(m.Fields, smdschema.StructField{Name: name, Type: smdschema.TypeRef{Inlined: convert(&member, preserve)}})
	}
	switch ap := p.AdditionalProperties; {
	case ap == nil:
		// An object without properties, or below preserve-unknown-fields,
		// takes any field.
		if preserve || len(p.Properties) == 0 {
			m.ElementType = named(deducedType)
		}
	case ap.Schema != nil:
		m.ElementType = smdschema.TypeRef{Inlined: convert(ap.Schema, preserve)}
	case ap.Allows:
		m.ElementType = named(deducedType)
	}
	return m
}

func convertList(p *schema.Props, preserve bool) *smdschema.List {
	l := &smdschema.List{ElementRelationship: smdschema.Atomic, ElementType: named(untypedType)}
	if p.XListType != nil {
		switch *p.XListType {
		case "set":
			l.ElementRelationship = smdschema.Associative
		case "map":
			l.ElementRelationship = smdschema.Associative
			l.Keys = p.XListMapKeys
		}
	}
	if p.Items != nil {
		l.ElementType = smdschema.TypeRef{Inlined: convert(p.Items, preserve)}
	}
	return l
}

func mapRelationship(t *string) smdschema.ElementRelationship {
	if t == nil {
		return ""
	}
	switch *t {
	case "atomic":
		return smdschema.Atomic
	case "granular":
		return smdschema.Separable
	}
	return ""
}

// commonTypes are ObjectMeta and OwnerReference as kube-apiserver's OpenAPI
// publishes them (finalizers a set, ownerReferences a map keyed by uid of
// atomic entries), and schemaconv's two untyped types.
func commonTypes() []smdschema.TypeDef {
	str := scalar(smdschema.String)
	num := scalar(smdschema.Numeric)
	untyped := scalar(smdschema.Scalar("untyped"))
	stringMap := smdschema.TypeRef{Inlined: smdschema.Atom{Map: &smdschema.Map{ElementType: str}}}
	return []smdschema.TypeDef{
		{Name: objectMetaType, Atom: smdschema.Atom{Map: &smdschema.Map{Fields: []smdschema.StructField{
			{Name: "annotations", Type: stringMap},
			{Name: "creationTimestamp", Type: untyped},
			{Name: "deletionGracePeriodSeconds", Type: num},
			{Name: "deletionTimestamp", Type: untyped},
			{Name: "finalizers", Type: smdschema.TypeRef{Inlined: smdschema.Atom{List: &smdschema.List{
				ElementType: str, ElementRelationship: smdschema.Associative}}}},
			{Name: "generateName", Type: str},
			{Name: "generation", Type: num},
			{Name: "labels", Type: stringMap},
			{Name: "managedFields", Type: smdschema.TypeRef{Inlined: smdschema.Atom{List: &smdschema.List{
				ElementType: named(untypedType), ElementRelationship: smdschema.Atomic}}}},
			{Name: "name", Type: str},
			{Name: "namespace", Type: str},
			{Name: "ownerReferences", Type: smdschema.TypeRef{Inlined: smdschema.Atom{List: &smdschema.List{
				ElementType: named(ownerRefType), ElementRelationship: smdschema.Associative, Keys: []string{"uid"}}}}},
			{Name: "resourceVersion", Type: str},
			{Name: "selfLink", Type: str},
			{Name: "uid", Type: str},
		}}}},
		{Name: ownerRefType, Atom: smdschema.Atom{Map: &smdschema.Map{ElementRelationship: smdschema.Atomic, Fields: []smdschema.StructField{
			{Name: "apiVersion", Type: str},
			{Name: "blockOwnerDeletion", Type: scalar(smdschema.Boolean)},
			{Name: "controller", Type: scalar(smdschema.Boolean)},
			{Name: "kind", Type: str},
			{Name: "name", Type: str},
			{Name: "uid", Type: str},
		}}}},
		{Name: untypedType, Atom: smdschema.Atom{
			Scalar: ptr(smdschema.Scalar("untyped")),
			List:   &smdschema.List{ElementType: named(untypedType), ElementRelationship: smdschema.Atomic},
			Map:    &smdschema.Map{ElementType: named(untypedType), ElementRelationship: smdschema.Atomic},
		}},
		{Name: deducedType, Atom: smdschema.Atom{
			Scalar: ptr(smdschema.Scalar("untyped")),
			List:   &smdschema.List{ElementType: named(untypedType), ElementRelationship: smdschema.Atomic},
			Map:    &smdschema.Map{ElementType: named(deducedType), ElementRelationship: smdschema.Separable},
		}},
	}
}
