// Package field reports problems with an object's fields the way Kubernetes
// does, so that a validation hook's errors read exactly as kube-apiserver's:
//
//	func validate(_ context.Context, obj rest.Object) field.ErrorList {
//		var errs field.ErrorList
//		spec := field.NewPath("spec")
//		if n := replicas(obj); n < 0 {
//			errs = append(errs, field.Invalid(spec.Child("replicas"), n, "must be greater than or equal to 0"))
//		}
//		return errs
//	}
//
// gives the 422 Invalid Status kube-apiserver gives, one cause per error:
//
//	Widget.shop.example.com "w1" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0
//
// Each constructor (Invalid, Required, NotSupported, Forbidden, TooLong,
// TooMany, Duplicate, NotFound, TypeInvalid, InternalError) renders its value
// and detail as k8s.io/apimachinery's package of the same name does; Path
// names a field as kube does (spec.containers[0].ports[1], metadata.labels[app]).
// ErrorList.Status builds the Invalid Status; rest's Strategy hooks return an
// ErrorList and rest does that for them.
package field
