// This file holds Kubernetes' semver library (kubernetes.Semver, version 1)
// and a semantic-version parser with the rules and error messages of
// github.com/blang/semver/v4, which Kubernetes uses.

//lint:file-ignore ST1005 the errors are blang/semver's, capitalized, as expressions see them in Kubernetes

package cellib

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// SemverType is the CEL type of semver()'s result, kubernetes.Semver.
var SemverType = cel.ObjectType("kubernetes.Semver")

// Semver returns the semver library at version 1 (Kubernetes 1.33+): strict
// semver.org 2.0.0 versions, or with normalize true a leading "v" dropped,
// missing minor and patch added as 0 and leading zeros removed.
//
//	semver(<string>) Semver, semver(<string>, <bool>) Semver
//	isSemver(<string>) bool, isSemver(<string>, <bool>) bool
//	<Semver>.major() int, .minor() int, .patch() int
//	<Semver>.isLessThan(<Semver>) bool
//	<Semver>.isGreaterThan(<Semver>) bool
//	<Semver>.compareTo(<Semver>) int
//
// Equality and comparison follow semver precedence: build metadata is
// ignored, a pre-release is lower than its release.
//
// Examples:
//
//	semver('1.2.3').compareTo(semver('2.0.0'))   // -1
//	isSemver('v1.0', true)                       // true
//	semver('v01.01', true) == semver('1.1.0')    // true
func Semver() cel.EnvOption {
	s := SemverType
	bin := func(id string, out *cel.Type, f func(a, b *semverVal) ref.Val) cel.FunctionOpt {
		return cel.MemberOverload(id, []*cel.Type{s, s}, out, cel.BinaryBinding(func(x, y ref.Val) ref.Val {
			a, ok := x.(*semverVal)
			if !ok {
				return types.MaybeNoSuchOverloadErr(x)
			}
			b, ok := y.(*semverVal)
			if !ok {
				return types.MaybeNoSuchOverloadErr(y)
			}
			return f(a, b)
		}))
	}
	part := func(id string, f func(*semverVal) uint64) cel.FunctionOpt {
		return cel.MemberOverload(id, []*cel.Type{s}, cel.IntType, cel.UnaryBinding(func(x ref.Val) ref.Val {
			v, ok := x.(*semverVal)
			if !ok {
				return types.MaybeNoSuchOverloadErr(x)
			}
			return types.Int(f(v))
		}))
	}
	return cel.Lib(&library{name: "kubernetes.Semver", options: []cel.EnvOption{
		cel.Function("semver",
			cel.Overload("string_to_semver", []*cel.Type{cel.StringType}, s, cel.UnaryBinding(func(v ref.Val) ref.Val { return stringToSemver(v, types.False) })),
			cel.Overload("string_bool_to_semver", []*cel.Type{cel.StringType, cel.BoolType}, s, cel.BinaryBinding(stringToSemver))),
		cel.Function("isSemver",
			cel.Overload("is_semver_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val { return isSemver(v, types.False) })),
			cel.Overload("is_semver_string_bool", []*cel.Type{cel.StringType, cel.BoolType}, cel.BoolType, cel.BinaryBinding(isSemver))),
		cel.Function("isGreaterThan", bin("semver_is_greater_than", cel.BoolType, func(a, b *semverVal) ref.Val { return types.Bool(a.compare(b) == 1) })),
		cel.Function("isLessThan", bin("semver_is_less_than", cel.BoolType, func(a, b *semverVal) ref.Val { return types.Bool(a.compare(b) == -1) })),
		cel.Function("compareTo", bin("semver_compare_to", cel.IntType, func(a, b *semverVal) ref.Val { return types.Int(a.compare(b)) })),
		cel.Function("major", part("semver_major", func(v *semverVal) uint64 { return v.major })),
		cel.Function("minor", part("semver_minor", func(v *semverVal) uint64 { return v.minor })),
		cel.Function("patch", part("semver_patch", func(v *semverVal) uint64 { return v.patch })),
		cel.CostModel(
			scan("string_to_semver", 0, 0, stringFactor, false), scan("string_bool_to_semver", 0, 0, stringFactor, false),
			scan("is_semver_string", 0, 0, stringFactor, false), scan("is_semver_string_bool", 0, 0, stringFactor, false),
			fixed("semver_is_greater_than", 1), fixed("semver_is_less_than", 1), fixed("semver_compare_to", 1),
			fixed("semver_major", 1), fixed("semver_minor", 1), fixed("semver_patch", 1),
		),
	}})
}

func stringToSemver(v, normalize ref.Val) ref.Val {
	s, bad := stringArg(v)
	if bad != nil {
		return bad
	}
	n, ok := normalize.(types.Bool)
	if !ok {
		return types.MaybeNoSuchOverloadErr(normalize)
	}
	parse := parseSemver
	if n {
		parse = normalizeSemver
	}
	r, err := parse(s)
	if err != nil {
		return types.WrapErr(err)
	}
	return r
}

func isSemver(v, normalize ref.Val) ref.Val {
	r := stringToSemver(v, normalize)
	if _, ok := r.(*semverVal); ok {
		return types.True
	}
	if _, ok := v.(types.String); ok {
		if _, ok := normalize.(types.Bool); ok {
			return types.False
		}
	}
	return r
}

// semverVal is a value of SemverType: a parsed version.
type semverVal struct {
	major, minor, patch uint64
	pre                 []prerelease
	build               []string
}

// prerelease is one dot-separated part of a pre-release: a number or an
// alphanumeric identifier.
type prerelease struct {
	str   string
	num   uint64
	isNum bool
}

var _ ref.Val = (*semverVal)(nil)

const (
	semverNumbers  = "0123456789"
	semverAlphanum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-" + semverNumbers
)

func containsOnly(s, set string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune(set, r) }) < 0
}

func hasLeadingZeroes(s string) bool { return len(s) > 1 && s[0] == '0' }

// parseSemver parses a strict semantic version.
func parseSemver(s string) (*semverVal, error) {
	if s == "" {
		return nil, errors.New("Version string empty")
	}
	parts := strings.SplitN(s, ".", 3)
	if len(parts) != 3 {
		return nil, errors.New("No Major.Minor.Patch elements found")
	}
	v := &semverVal{}
	num := func(s, what string) (uint64, error) {
		if !containsOnly(s, semverNumbers) {
			return 0, fmt.Errorf("Invalid character(s) found in %s number %q", strings.ToLower(what), s)
		}
		if hasLeadingZeroes(s) {
			return 0, fmt.Errorf("%s number must not contain leading zeroes %q", what, s)
		}
		return strconv.ParseUint(s, 10, 64)
	}
	var err error
	if v.major, err = num(parts[0], "Major"); err != nil {
		return nil, err
	}
	if v.minor, err = num(parts[1], "Minor"); err != nil {
		return nil, err
	}
	patch := parts[2]
	var build, pre []string
	if i := strings.IndexByte(patch, '+'); i >= 0 {
		build = strings.Split(patch[i+1:], ".")
		patch = patch[:i]
	}
	if i := strings.IndexByte(patch, '-'); i >= 0 {
		pre = strings.Split(patch[i+1:], ".")
		patch = patch[:i]
	}
	if v.patch, err = num(patch, "Patch"); err != nil {
		return nil, err
	}
	for _, p := range pre {
		pr, err := parsePrerelease(p)
		if err != nil {
			return nil, err
		}
		v.pre = append(v.pre, pr)
	}
	for _, b := range build {
		if b == "" {
			return nil, errors.New("Build meta data is empty")
		}
		if !containsOnly(b, semverAlphanum) {
			return nil, fmt.Errorf("Invalid character(s) found in build meta data %q", b)
		}
		v.build = append(v.build, b)
	}
	return v, nil
}

func parsePrerelease(s string) (prerelease, error) {
	if s == "" {
		return prerelease{}, errors.New("Prerelease is empty")
	}
	if containsOnly(s, semverNumbers) {
		if hasLeadingZeroes(s) {
			return prerelease{}, fmt.Errorf("Numeric PreRelease version must not contain leading zeroes %q", s)
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return prerelease{}, err
		}
		return prerelease{num: n, isNum: true}, nil
	}
	if containsOnly(s, semverAlphanum) {
		return prerelease{str: s}, nil
	}
	return prerelease{}, fmt.Errorf("Invalid character(s) found in prerelease %q", s)
}

// normalizeSemver drops a leading "v", removes leading zeros from the
// numbers, fills in a missing minor and patch with 0, then parses strictly.
// Whitespace is not trimmed.
func normalizeSemver(s string) (*semverVal, error) {
	s = strings.TrimPrefix(s, "v")
	parts := strings.SplitN(s, ".", 3)
	for i, p := range parts {
		if len(p) > 1 {
			p = strings.TrimLeft(p, "0")
			if p == "" || !strings.ContainsAny(p[:1], semverNumbers) {
				p = "0" + p
			}
			parts[i] = p
		}
	}
	if len(parts) < 3 {
		if strings.ContainsAny(parts[len(parts)-1], "+-") {
			return nil, errors.New("short version cannot contain PreRelease/Build meta data")
		}
		for len(parts) < 3 {
			parts = append(parts, "0")
		}
	}
	return parseSemver(strings.Join(parts, "."))
}

// compare is semver precedence: -1, 0 or 1.
func (v *semverVal) compare(o *semverVal) int {
	for _, p := range [][2]uint64{{v.major, o.major}, {v.minor, o.minor}, {v.patch, o.patch}} {
		if p[0] != p[1] {
			if p[0] > p[1] {
				return 1
			}
			return -1
		}
	}
	switch {
	case len(v.pre) == 0 && len(o.pre) == 0:
		return 0
	case len(v.pre) == 0:
		return 1
	case len(o.pre) == 0:
		return -1
	}
	for i := 0; i < len(v.pre) && i < len(o.pre); i++ {
		if c := v.pre[i].compare(o.pre[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(v.pre) == len(o.pre):
		return 0
	case len(v.pre) < len(o.pre):
		return -1
	}
	return 1
}

// compare orders pre-release parts: numbers below identifiers, numbers
// numerically, identifiers by bytes.
func (p prerelease) compare(o prerelease) int {
	switch {
	case p.isNum && !o.isNum:
		return -1
	case !p.isNum && o.isNum:
		return 1
	case p.isNum:
		switch {
		case p.num > o.num:
			return 1
		case p.num < o.num:
			return -1
		}
		return 0
	}
	return strings.Compare(p.str, o.str)
}

// String is the version as semver.org writes it.
func (v *semverVal) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d.%d.%d", v.major, v.minor, v.patch)
	for i, p := range v.pre {
		if i == 0 {
			b.WriteByte('-')
		} else {
			b.WriteByte('.')
		}
		if p.isNum {
			b.WriteString(strconv.FormatUint(p.num, 10))
		} else {
			b.WriteString(p.str)
		}
	}
	for i, s := range v.build {
		if i == 0 {
			b.WriteByte('+')
		} else {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// ConvertToNative returns the version's string.
func (v *semverVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf("").AssignableTo(typeDesc) {
		return v.String(), nil
	}
	return objectVal{SemverType}.ConvertToNative(typeDesc)
}

// ConvertToType converts to SemverType or type only.
func (v *semverVal) ConvertToType(t ref.Type) ref.Val { return objectVal{SemverType}.convert(v, t) }

// Equal is equal precedence.
func (v *semverVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(*semverVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(v.compare(o) == 0)
}

// Type is SemverType.
func (v *semverVal) Type() ref.Type { return SemverType }

// Value is the version's string.
func (v *semverVal) Value() any { return v.String() }
