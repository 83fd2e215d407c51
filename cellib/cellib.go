// This file holds Base, the whole environment as Kubernetes 1.34 builds it
// (k8s.io/apiserver pkg/cel/environment/base.go), and what the libraries
// share: the library type and the value conversions of opaque objects.

package cellib

import (
	"fmt"
	"reflect"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
)

// Base returns the options of Kubernetes 1.34's base CEL environment, in
// its order: homogeneous aggregate literals, eager declaration checks, UTC
// as the default time zone, the url, regex and lists libraries, has()
// without cost, authz, cross-type numeric comparisons, optional types (the
// version cel-go v0.26 had), quantity, the duration, timestamp, regex and
// literal validators, strings v2, sets, ip, cidr, format, authz selectors,
// two-variable comprehensions, semver v1 and cel-go's lists v3.
//
// It declares no variables. The caller adds them, and its own type
// provider (if any) before Base, as ip and cidr register their types with
// the environment's provider.
func Base() []cel.EnvOption {
	return []cel.EnvOption{
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		URLs(),
		Regex(),
		Lists(),
		cel.CostEstimatorOptions(cost.PresenceTestHasCost(false)),
		cel.Lib(presenceFree{}),
		Authz(),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(cel.OptionalTypesVersion(optionalTypesVersion)),
		Quantity(),
		cel.ASTValidators(
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateRegexLiterals(),
			cel.ValidateHomogeneousAggregateLiterals(),
		),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(ext.SetsVersion(0)),
		IP(),
		CIDR(),
		Format(),
		AuthzSelectors(),
		ext.TwoVarComprehensions(ext.TwoVarComprehensionsVersion(0)),
		Semver(),
		ext.Lists(ext.ListsVersion(3)),
	}
}

// optionalTypesVersion is the newest version of cel-go's optional library
// in cel-go v0.26, which Kubernetes 1.34 builds with: first, last and
// optional.unwrap, but not v3's hasValue(x) nor v4's optMap expansion.
const optionalTypesVersion = 2

// presenceFree makes has() free at run time, as it is in the estimate, as
// Kubernetes has it since cel-go v0.17.7 changed it to 1.
type presenceFree struct{}

func (presenceFree) LibraryName() string             { return "annex.cellib.presenceFree" }
func (presenceFree) CompileOptions() []cel.EnvOption { return nil }
func (presenceFree) ProgramOptions() []cel.ProgramOption {
	return []cel.ProgramOption{cel.CostTrackerOptions(cost.TrackerPresenceTestHasCost(false))}
}

// library is one of this package's libraries: a name, its functions and
// their cost models, and program options.
type library struct {
	name    string
	options []cel.EnvOption
	program []cel.ProgramOption
}

func (l *library) LibraryName() string                 { return l.name }
func (l *library) CompileOptions() []cel.EnvOption     { return l.options }
func (l *library) ProgramOptions() []cel.ProgramOption { return l.program }

// objectVal is the part of ref.Val every value of this package shares:
// its type, and conversion to that type (or to type) only.
type objectVal struct{ t *types.Type }

// ConvertToNative fails: callers use Value.
func (o objectVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", o.t.TypeName(), typeDesc)
}

// Type returns the value's CEL type.
func (o objectVal) Type() ref.Type { return o.t }

// convert is ConvertToType for a value v of o's type.
func (o objectVal) convert(v ref.Val, typeVal ref.Type) ref.Val {
	switch typeVal {
	case o.t:
		return v
	case types.TypeType:
		return o.t
	}
	if typeVal != nil && typeVal.TypeName() == o.t.TypeName() {
		return v
	}
	return types.NewErr("type conversion error from '%s' to '%s'", o.t.TypeName(), typeVal)
}

// stringArg is the string in a ref.Val, or an error value.
func stringArg(v ref.Val) (string, ref.Val) {
	s, ok := v.(types.String)
	if !ok {
		return "", types.MaybeNoSuchOverloadErr(v)
	}
	return string(s), nil
}
