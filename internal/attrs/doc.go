// Package attrs holds the attributes of one write that both the layer
// performing it (rest) and the stage judging it (admission) read: operation,
// resource, names, the new and old object, dry run, user and options, as
// [Admission].
//
// # Why a package of its own
//
// rest runs admission but must not import it (DESIGN.md: rest declares the
// small interfaces it needs; stage packages never import each other or the
// serving layers). With the type in either package the other needs a copy
// of it and glue that copies every field, twice per write. A leaf that
// imports only meta, filters and the standard library lets both name the
// same type, so an admission chain is a rest.Admitter as it is, with no
// glue. Stage packages may import it (imports_test.go allows it as it
// allows meta and filters); it must never import a stage.
//
// # Usage
//
//	a := &attrs.Admission{Operation: attrs.Create, Group: "platform.example.com", Version: "v1alpha1",
//		Resource: "environments", Kind: "Environment", Namespace: "ns1", Object: obj}
//	err := chain.Mutate(ctx, a) // may replace a.Object
//	err = chain.Validate(ctx, a)
//
// # Concurrency
//
// An Admission belongs to one request. Mutators run one after another and
// may change Object (and the reinvocation state); validators may run in
// parallel and must not write to it.
package attrs
