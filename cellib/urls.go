// This file holds Kubernetes' URL library (kubernetes.urls): url, isURL and
// the accessors of a URL.

package cellib

import (
	"net/url"
	"reflect"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// URLType is the CEL type of url()'s result, kubernetes.URL.
var URLType = cel.ObjectType("kubernetes.URL")

// URLs returns the URL library. A URL must be absolute or an absolute path
// (net/url.ParseRequestURI, OpenAPI's uri format); the accessors then read
// it as net/url.Parse does, so a fragment is dropped rather than folded
// into the path or query.
//
//	url(<string>) URL                       error "URL parse error during conversion from string: ..."
//	isURL(<string>) bool
//	<URL>.getScheme() string                '' when absent
//	<URL>.getHost() string                  with the port; IPv6 in brackets
//	<URL>.getHostname() string              without port or brackets
//	<URL>.getPort() string
//	<URL>.getEscapedPath() string           escaped: "with space" is "with%20space"
//	<URL>.getQuery() map(string, list(string)) unescaped; {} when absent
//
// Examples:
//
//	url('https://example.com:80/').getHost()   // 'example.com:80'
//	url('https://[::1]:80/').getHostname()     // '::1'
//	isURL('../relative-path')                  // false
func URLs() cel.EnvOption {
	accessor := func(name, id string, f func(*url.URL) ref.Val, out *cel.Type) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload(id, []*cel.Type{URLType}, out, cel.UnaryBinding(func(v ref.Val) ref.Val {
			u, ok := v.(urlVal)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			return f(u.URL)
		})))
	}
	str := func(f func(*url.URL) string) func(*url.URL) ref.Val {
		return func(u *url.URL) ref.Val { return types.String(f(u)) }
	}
	return cel.Lib(&library{name: "kubernetes.urls", options: []cel.EnvOption{
		cel.Function("url", cel.Overload("string_to_url", []*cel.Type{cel.StringType}, URLType, cel.UnaryBinding(stringToURL))),
		cel.Function("isURL", cel.Overload("is_url_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, bad := stringArg(v)
			if bad != nil {
				return bad
			}
			_, err := url.ParseRequestURI(s)
			return types.Bool(err == nil)
		}))),
		accessor("getScheme", "url_get_scheme", str(func(u *url.URL) string { return u.Scheme }), cel.StringType),
		accessor("getHost", "url_get_host", str(func(u *url.URL) string { return u.Host }), cel.StringType),
		accessor("getHostname", "url_get_hostname", str((*url.URL).Hostname), cel.StringType),
		accessor("getPort", "url_get_port", str((*url.URL).Port), cel.StringType),
		accessor("getEscapedPath", "url_get_escaped_path", str((*url.URL).EscapedPath), cel.StringType),
		accessor("getQuery", "url_get_query", urlQuery, cel.MapType(cel.StringType, cel.ListType(cel.StringType))),
		cel.CostModel(
			scan("string_to_url", 0, 0, stringFactor, true),
			fixed("url_get_scheme", 1), fixed("url_get_host", 1), fixed("url_get_hostname", 1),
			fixed("url_get_port", 1), fixed("url_get_escaped_path", 1), fixed("url_get_query", 1),
		),
	}})
}

func stringToURL(v ref.Val) ref.Val {
	s, bad := stringArg(v)
	if bad != nil {
		return bad
	}
	// ParseRequestURI decides what is a URL (absolute, or an absolute
	// path); Parse reads it, as ParseRequestURI would put a fragment in
	// the path or the query.
	if _, err := url.ParseRequestURI(s); err != nil {
		return types.NewErr("URL parse error during conversion from string: %v", err)
	}
	u, err := url.Parse(s)
	if err != nil {
		return types.NewErr("URL parse error during conversion from string: %v", err)
	}
	return urlVal{URL: u}
}

func urlQuery(u *url.URL) ref.Val {
	q := u.Query()
	m := make(map[ref.Val]ref.Val, len(q))
	for k, v := range q {
		m[types.String(k)] = types.NewStringList(types.DefaultTypeAdapter, v)
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, m)
}

// urlVal is a value of URLType.
type urlVal struct{ *url.URL }

var _ ref.Val = urlVal{}

// ConvertToNative returns the *url.URL, or its string.
func (u urlVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf(u.URL).AssignableTo(typeDesc) {
		return u.URL, nil
	}
	if reflect.TypeOf("").AssignableTo(typeDesc) {
		return u.URL.String(), nil
	}
	return objectVal{URLType}.ConvertToNative(typeDesc)
}

// ConvertToType converts to URLType or type only.
func (u urlVal) ConvertToType(t ref.Type) ref.Val { return objectVal{URLType}.convert(u, t) }

// Equal compares the URLs' strings.
func (u urlVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(urlVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(u.URL.String() == o.URL.String())
}

// Type is URLType.
func (u urlVal) Type() ref.Type { return URLType }

// Value is the *url.URL.
func (u urlVal) Value() any { return u.URL }
