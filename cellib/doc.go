// Package cellib is Kubernetes' CEL libraries for cel-go, written for annex
// without importing k8s.io: the functions a CustomResourceDefinition's
// x-kubernetes-validations, a ValidatingAdmissionPolicy or
// MutatingAdmissionPolicy, or a webhook's matchConditions may call in a
// Kubernetes 1.34 API server, with the same names, overloads, result types,
// error messages and cost.
//
// # Libraries
//
//   - [Lists]: isSorted, sum, min, max, indexOf, lastIndexOf on lists.
//   - [Regex]: find and findAll on strings.
//   - [URLs]: url, isURL, getScheme, getHost, getHostname, getPort,
//     getEscapedPath, getQuery.
//   - [Quantity]: quantity, isQuantity, sign, isInteger, asInteger,
//     asApproximateFloat, add, sub, isLessThan, isGreaterThan, compareTo,
//     with resource.Quantity's parsing and arithmetic.
//   - [IP] and [CIDR]: ip, isIP, ip.isCanonical, family, isUnspecified,
//     isLoopback, isLinkLocalMulticast, isLinkLocalUnicast, isGlobalUnicast,
//     cidr, isCIDR, containsIP, containsCIDR, ip, masked, prefixLength, and
//     string() of both.
//   - [Semver]: semver, isSemver (both with the normalize flag), major,
//     minor, patch, isLessThan, isGreaterThan, compareTo.
//   - [Format]: format.named and format.dns1123Label() and the other named
//     formats, each with validate.
//   - [Authz] and [AuthzSelectors]: the authorizer variable's
//     path/group/resource/subresource/namespace/name/fieldSelector/
//     labelSelector/serviceAccount builders, check, and the Decision's
//     allowed, reason, errored and error, through an [Authorizer].
//   - [JSONPatch]: jsonpatch.escapeKey, for MutatingAdmissionPolicy.
//
// [Base] is all of them (but JSONPatch) with the cel-go options and
// extensions Kubernetes 1.34 enables (strings v2, lists v3, sets,
// two-variable comprehensions, optional types, homogeneous aggregate
// literals, literal validators, has() without cost): what an expression
// copied from a 1.34 cluster expects, and nothing it would not find there.
//
// # Usage
//
//	env, err := cel.NewEnv(append(cellib.Base(), cel.Variable("self", cel.DynType))...)
//	ast, iss := env.Compile(`quantity(self.memory).isLessThan(quantity('2Gi'))`)
//
// An expression that calls the authorizer needs the variables declared
// (cel.Variable("authorizer", cellib.AuthorizerType) and
// cel.Variable("authorizer.requestResource", cellib.ResourceCheckType)) and
// bound per request with [AuthorizerValue] and [RequestResourceValue].
//
// # Cost
//
// Every function carries Kubernetes' cost (library/cost.go): a static
// estimate for cel-go's estimator and a runtime cost for its tracker, as
// cel.CostModel entries of the environment, so a program's cost limit counts
// them with no further option. A check() costs 350,000, so that two fit in
// one expression's limit.
//
// # Caveats
//
// Kubernetes gates libraries by compatibility version; Base is the 1.34
// environment for stored expressions, which also has ext.Lists v3 (sort,
// slice, flatten...) that a 1.34 server refuses in new expressions until
// 1.35. Quantities whose exponents are thousands of digits apart cannot be
// added (Kubernetes would allocate the digits); see [Quantity]. Values of
// this package's types compare equal by value: Kubernetes errors when a
// quantity from add or sub is the right operand of ==, annex does not.
package cellib
