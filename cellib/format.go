// This file holds Kubernetes' format library (kubernetes.format): named
// string formats with kube's validation messages. The name formats use
// package meta's validators, which carry apimachinery's wording; the CRD
// formats (uri, uuid, byte, date, datetime) follow kube-openapi's strfmt.

package cellib

import (
	"net/url"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/annexapi/annex/meta"
)

// FormatType is the CEL type of a named format, kubernetes.NamedFormat.
var FormatType = cel.ObjectType("kubernetes.NamedFormat")

// Format returns the format library:
//
//	format.named(<string>) optional(Format)   optional.none() for an unknown name
//	format.dns1123Label() Format, and one such function per name below
//	<Format>.validate(<string>) optional(list(string))   none when valid, else the errors
//
// The names: dns1123Label, dns1123Subdomain, dns1035Label, qualifiedName,
// dns1123LabelPrefix, dns1123SubdomainPrefix, dns1035LabelPrefix,
// labelValue, uri, uuid, byte, date, datetime.
//
// Examples:
//
//	format.dns1123Label().validate('my-name')                        // optional.none()
//	!format.dns1123Label().validate(self.name).hasValue()            // a rule
//	format.dns1123Label().validate(self.name).value().join('\n')     // its messageExpression
func Format() cel.EnvOption {
	opts := []cel.EnvOption{
		cel.Function("validate", cel.MemberOverload("format-validate", []*cel.Type{FormatType, cel.StringType},
			cel.OptionalType(cel.ListType(cel.StringType)), cel.BinaryBinding(formatValidate))),
		cel.Function("format.named", cel.Overload("format-named", []*cel.Type{cel.StringType}, cel.OptionalType(FormatType),
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				s, bad := stringArg(v)
				if bad != nil {
					return bad
				}
				f, ok := namedFormats[s]
				if !ok {
					return types.OptionalNone
				}
				return types.OptionalOf(f)
			}))),
		cel.CostModel(validateModel(), fixed("format-named", 1)),
	}
	names := make([]string, 0, len(namedFormats))
	for n := range namedFormats {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := namedFormats[n]
		opts = append(opts, cel.Function("format."+n, cel.Overload("format."+n, nil, FormatType,
			cel.FunctionBinding(func(...ref.Val) ref.Val { return f }))))
	}
	return cel.Lib(&library{name: "kubernetes.format", options: opts})
}

// formatVal is a named format: its name, its validation, and the length of
// the regular expression it is (or would be), for cost.
type formatVal struct {
	name         string
	validate     func(string) []string
	maxRegexSize int
}

var _ ref.Val = (*formatVal)(nil)

// Pattern lengths Kubernetes prices the formats by.
const (
	base64Length = 84   // govalidator's base64 pattern
	urlLength    = 1103 // govalidator's URL pattern
	uuidLength   = len(uuidPattern)
	// dateTimeLength is kube-openapi's DateTimePattern's length, which
	// prices date too.
	dateTimeLength = len(`^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$`)
	uuidPattern    = `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`
)

var (
	uuidRE = regexp.MustCompile(uuidPattern)
	// base64RE is govalidator's: the standard alphabet, padded.
	base64RE   = regexp.MustCompile(`^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$`)
	timeOfDay  = regexp.MustCompile(`^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$`)
	rfc3339Day = "2006-01-02"
)

// namedFormats are the formats by the names format.named knows.
var namedFormats = map[string]*formatVal{
	"dns1123Label":           {"DNS1123Label", func(s string) []string { return meta.NameIsDNSLabel(s, false) }, 30},
	"dns1123Subdomain":       {"DNS1123Subdomain", func(s string) []string { return meta.NameIsDNSSubdomain(s, false) }, 60},
	"dns1035Label":           {"DNS1035Label", func(s string) []string { return meta.NameIsDNS1035Label(s, false) }, 30},
	"qualifiedName":          {"QualifiedName", meta.IsQualifiedName, 60},
	"dns1123LabelPrefix":     {"DNS1123LabelPrefix", func(s string) []string { return meta.NameIsDNSLabel(s, true) }, 30},
	"dns1123SubdomainPrefix": {"DNS1123SubdomainPrefix", func(s string) []string { return meta.NameIsDNSSubdomain(s, true) }, 60},
	"dns1035LabelPrefix":     {"DNS1035LabelPrefix", func(s string) []string { return meta.NameIsDNS1035Label(s, true) }, 30},
	"labelValue":             {"LabelValue", meta.IsValidLabelValue, 40},
	"uri": {"URI", func(s string) []string {
		if _, err := url.ParseRequestURI(s); err != nil {
			return []string{err.Error()}
		}
		return nil
	}, urlLength},
	"uuid": {"uuid", func(s string) []string {
		if !uuidRE.MatchString(s) {
			return []string{"does not match the UUID format"}
		}
		return nil
	}, uuidLength},
	"byte": {"byte", func(s string) []string {
		if !base64RE.MatchString(s) {
			return []string{"invalid base64"}
		}
		return nil
	}, base64Length},
	"date": {"date", func(s string) []string {
		if !isDate(s) {
			return []string{"invalid date"}
		}
		return nil
	}, dateTimeLength},
	"datetime": {"datetime", func(s string) []string {
		if !isDateTime(s) {
			return []string{"invalid datetime"}
		}
		return nil
	}, dateTimeLength},
}

func isDate(s string) bool {
	_, err := time.Parse(rfc3339Day, s)
	return err == nil
}

// isDateTime is kube-openapi's date-time check: a date, a 't' (any case),
// and a time of day with a zone, each field in range by string comparison.
func isDateTime(s string) bool {
	if len(s) < 4 {
		return false
	}
	parts := strings.Split(strings.ToLower(s), "t")
	if len(parts) < 2 || !isDate(parts[0]) {
		return false
	}
	m := timeOfDay.FindStringSubmatch(parts[1])
	if m == nil {
		return false
	}
	return m[1] <= "23" && m[2] <= "59" && m[3] <= "59"
}

func formatValidate(fv, sv ref.Val) ref.Val {
	f, ok := fv.(*formatVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(fv)
	}
	s, bad := stringArg(sv)
	if bad != nil {
		return bad
	}
	errs := f.validate(s)
	if len(errs) == 0 {
		return types.OptionalNone
	}
	return types.OptionalOf(types.NewStringList(types.DefaultTypeAdapter, errs))
}

// validateModel prices validate as a regular expression the size of the
// format's, over the string; the estimate assumes the longest name format.
func validateModel() cost.OverloadModel {
	return priced("format-validate",
		func(e cost.Estimator, _ *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
			if len(args) < 1 {
				return nil
			}
			c := cost.EstimateSize(e, args[0]).MultiplyByCostFactor(stringFactor).MultiplyByCostFactor(maxNameFormatRegexSize * regexFactor)
			return cost.NewCallEstimate(c, nil)
		},
		func(args []ref.Val, _ ref.Val) *uint64 {
			if len(args) < 2 {
				return nil
			}
			f, ok := args[0].(*formatVal)
			if !ok {
				return nil
			}
			c := regexCost(actualSize(args[1]), uint64(f.maxRegexSize))
			return &c
		})
}

// ConvertToNative fails: a format has no Go form outside this package.
func (f *formatVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return objectVal{FormatType}.ConvertToNative(typeDesc)
}

// ConvertToType converts to FormatType or type only.
func (f *formatVal) ConvertToType(t ref.Type) ref.Val { return objectVal{FormatType}.convert(f, t) }

// Equal compares names.
func (f *formatVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(*formatVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(f.name == o.name)
}

// Type is FormatType.
func (f *formatVal) Type() ref.Type { return FormatType }

// Value is the format.
func (f *formatVal) Value() any { return f }
