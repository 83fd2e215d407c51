package cellib_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/annexapi/annex/cellib"
	"github.com/annexapi/annex/filters"
)

// libCase is one expression and what Kubernetes says it gives: a value
// (want), or a compile error (compileErr: from type checking, validation
// or program construction), or an evaluation error (evalErr), each matched
// as a substring.
type libCase struct {
	name       string
	expr       string
	want       any
	compileErr string
	evalErr    string
}

// none and some stand for optional results.
type (
	none struct{}
	some struct{ v any }
)

// libraryCases are taken from Kubernetes' own tests and documentation of
// each library; the comment before each group names the file (in
// kubernetes/kubernetes, staging/src/k8s.io/...). Expected values are
// theirs.
var libraryCases = []libCase{
	// Lists: apiextensions-apiserver/pkg/apiserver/schema/cel/validation_test.go
	// ("stdlib list functions") and apiserver/pkg/cel/library/lists.go.
	{name: "list_sum", expr: `[1, 2, 2, 3].sum()`, want: int64(8)},
	{name: "list_min", expr: `[1, 2, 2, 3].min()`, want: int64(1)},
	{name: "list_max", expr: `[1, 2, 2, 3].max()`, want: int64(3)},
	{name: "list_is_sorted", expr: `[1, 2, 2, 3].isSorted()`, want: true},
	{name: "list_unsorted", expr: `[2, 1].isSorted()`, want: false},
	{name: "list_strings_sorted", expr: `['a', 'b', 'b', 'c'].isSorted()`, want: true},
	{name: "list_doubles_unsorted", expr: `[2.0, 1.0].isSorted()`, want: false},
	{name: "list_index_of", expr: `[1, 2, 2, 3].indexOf(2)`, want: int64(1)},
	{name: "list_last_index_of", expr: `['a', 'b', 'b', 'c'].lastIndexOf('b')`, want: int64(2)},
	{name: "list_index_of_missing", expr: `[1.0].indexOf(1.1)`, want: int64(-1)},
	{name: "list_double_sum", expr: `[1.0, 3.0].sum()`, want: float64(4)},
	{name: "list_duration_sum", expr: `[duration('1s'), duration('1m'), duration('1m'), duration('1h')].sum() == duration('1h2m1s')`, want: true},
	{name: "list_timestamp_min", expr: `[timestamp('2000-02-01T00:00:00Z'), timestamp('2000-01-01T00:00:00Z')].min() == timestamp('2000-01-01T00:00:00Z')`, want: true},
	{name: "list_deep_equality_index", expr: `[[1], [2]].indexOf([1])`, want: int64(0)},
	{name: "list_map_last_index", expr: `[{'a': 1}, {'b': 2}].lastIndexOf({'b': 2})`, want: int64(1)},
	{name: "list_min_with_default", expr: `([0] + self.emptyInts).min()`, want: int64(0)},
	{name: "list_dyn_empty_sum", expr: `dyn([]).sum()`, want: int64(0)},
	{name: "list_dyn_double_sum", expr: `dyn([1.0, 2.0]).sum()`, want: float64(3)},
	{name: "list_empty_sum", expr: `[].sum()`, want: int64(0)},
	{name: "list_min_empty", expr: `self.emptyInts.min()`, evalErr: "min called on empty list"},
	{name: "list_max_empty", expr: `self.emptyInts.max()`, evalErr: "max called on empty list"},
	{name: "list_sum_strings", expr: `['a', 'b'].sum()`, compileErr: "found no matching overload for 'sum' applied to 'list(string).()"},
	{name: "list_min_lists", expr: `[[1], [2]].min()`, compileErr: "found no matching overload for 'min' applied to 'list(list(int)).()"},
	// cel-go's lists extension at version 3, as Kubernetes 1.34 enables it.
	{name: "ext_lists_sort", expr: `[3, 1, 2].sort()`, want: []any{int64(1), int64(2), int64(3)}},
	{name: "ext_lists_slice", expr: `[1, 2, 3, 4].slice(1, 3)`, want: []any{int64(2), int64(3)}},

	// Regex: validation_test.go ("stdlib regex functions") and library/regex.go.
	{name: "regex_find", expr: `'this is a 123 string 456'.find('[0-9]+')`, want: "123"},
	{name: "regex_find_none", expr: `'this is a 123 string 456'.find('xyz')`, want: ""},
	{name: "regex_find_all", expr: `'this is a 123 string 456'.findAll('[0-9]+')`, want: []any{"123", "456"}},
	{name: "regex_find_all_zero", expr: `'this is a 123 string 456'.findAll('[0-9]+', 0)`, want: []any{}},
	{name: "regex_find_all_one", expr: `'this is a 123 string 456'.findAll('[0-9]+', 1)`, want: []any{"123"}},
	{name: "regex_find_all_negative", expr: `'this is a 123 string 456'.findAll('[0-9]+', -1)`, want: []any{"123", "456"}},
	{name: "regex_find_all_none", expr: `'this is a 123 string 456'.findAll('xyz', 1)`, want: []any{}},
	{name: "regex_find_bad_constant", expr: `'x'.find(')')`, compileErr: "error parsing regexp: unexpected ): `)`"},
	{name: "regex_find_all_bad_constant", expr: `'x'.findAll(')', 1)`, compileErr: "error parsing regexp: unexpected ): `)`"},
	{name: "regex_find_bad_runtime", expr: `'x'.find(self.paren)`, evalErr: "Illegal regex: error parsing regexp: unexpected ): `)`"},
	{name: "regex_matches_bad", expr: `'x'.matches('x++')`, compileErr: "invalid matches argument"},

	// URLs: validation_test.go ("URL parsing") and library/urls.go.
	{name: "url_scheme_absent", expr: `url('/path').getScheme()`, want: ""},
	{name: "url_scheme", expr: `url('https://example.com/').getScheme()`, want: "https"},
	{name: "url_host_port", expr: `url('https://example.com:80/').getHost()`, want: "example.com:80"},
	{name: "url_host_ipv6", expr: `url('https://[::1]:80/').getHost()`, want: "[::1]:80"},
	{name: "url_hostname", expr: `url('https://example.com:80/').getHostname()`, want: "example.com"},
	{name: "url_hostname_ipv6", expr: `url('https://[::1]/').getHostname()`, want: "::1"},
	{name: "url_port", expr: `url('https://example.com:80/').getPort()`, want: "80"},
	{name: "url_port_absent", expr: `url('/path').getPort()`, want: ""},
	{name: "url_escaped_path", expr: `url('https://example.com/with space/').getEscapedPath()`, want: "/with%20space/"},
	{name: "url_escaped_path_absent", expr: `url('https://example.com').getEscapedPath()`, want: ""},
	{name: "url_query", expr: `url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()`,
		want: map[any]any{"k1": []any{"a"}, "k2": []any{"b", "c"}}},
	{name: "url_query_spaces", expr: `url('https://example.com/path?key with spaces=value with spaces').getQuery()`,
		want: map[any]any{"key with spaces": []any{"value with spaces"}}},
	{name: "url_query_empty", expr: `url('https://example.com/path?').getQuery()`, want: map[any]any{}},
	{name: "url_from_field", expr: `url(self.url).getEscapedPath()`, want: "/docs/home"},
	{name: "is_url", expr: `isURL('https://user:pass@example.com:80/path?query=val#fragment')`, want: true},
	{name: "is_url_path", expr: `isURL('/path')`, want: true},
	{name: "is_url_bad_host", expr: `isURL('https://a:b:c/')`, want: false},
	{name: "is_url_relative", expr: `isURL('../relative-path')`, want: false},
	{name: "url_relative", expr: `url('../relative-path')`, evalErr: `URL parse error during conversion from string: parse "../relative-path": invalid URI for request`},

	// Quantity: apiserver/pkg/cel/library/quantity_test.go and quantity.go.
	{name: "quantity_parse", expr: `quantity("12Mi").asInteger()`, want: int64(12582912)},
	{name: "quantity_invalid_suffix", expr: `quantity("10Mo")`, evalErr: "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
	{name: "quantity_invalid_suffix_passes_regex", expr: `quantity("10Mm")`, evalErr: "unable to parse quantity's suffix"},
	{name: "is_quantity", expr: `isQuantity("20")`, want: true},
	{name: "is_quantity_mebibytes", expr: `isQuantity("20Mi")`, want: true},
	{name: "is_quantity_bad_suffix", expr: `isQuantity("20Mo")`, want: false},
	{name: "is_quantity_uppercase_k", expr: `isQuantity("200K")`, want: false},
	{name: "is_quantity_comma", expr: `isQuantity("1,3G")`, want: false},
	{name: "is_quantity_no_overload", expr: `isQuantity([1, 2, 3])`, compileErr: "found no matching overload for 'isQuantity' applied to"},
	{name: "quantity_equality_symmetry", expr: `quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")`, want: true},
	{name: "quantity_equality_transitivity", expr: `quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && quantity("0.002G") == quantity("2000k")`, want: true},
	{name: "quantity_inequality", expr: `quantity("200M") == quantity("0.3G")`, want: false},
	{name: "quantity_less", expr: `quantity("50M").isLessThan(quantity("50Mi"))`, want: true},
	{name: "quantity_less_false", expr: `quantity("100M").isLessThan(quantity("50M"))`, want: false},
	{name: "quantity_greater", expr: `quantity("50Mi").isGreaterThan(quantity("50M"))`, want: true},
	{name: "quantity_compare_equal", expr: `quantity("200M").compareTo(quantity("0.2G"))`, want: int64(0)},
	{name: "quantity_compare_less", expr: `quantity("50M").compareTo(quantity("50Mi"))`, want: int64(-1)},
	{name: "quantity_compare_greater", expr: `quantity("50Mi").compareTo(quantity("50M"))`, want: int64(1)},
	{name: "quantity_add", expr: `quantity("50k").add(quantity("20")) == quantity("50.02k")`, want: true},
	{name: "quantity_add_int", expr: `quantity("50k").add(20).isLessThan(quantity("50020"))`, want: false},
	{name: "quantity_sub", expr: `quantity("50k").sub(quantity("20")) == quantity("49.98k")`, want: true},
	{name: "quantity_sub_int", expr: `quantity("50k").sub(20) == quantity("49980")`, want: true},
	{name: "quantity_chain", expr: `quantity("50k").add(20).sub(quantity("100k")).asInteger()`, want: int64(-49980)},
	{name: "quantity_chain_neg_int", expr: `quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger()`, want: int64(20)},
	{name: "quantity_as_integer", expr: `quantity("50k").asInteger()`, want: int64(50000)},
	{name: "quantity_as_integer_overflow", expr: `quantity("9999999999999999999999999999999999999G").asInteger()`, evalErr: "cannot convert value to integer"},
	{name: "quantity_is_integer_false", expr: `quantity("9999999999999999999999999999999999999G").isInteger()`, want: false},
	{name: "quantity_is_integer", expr: `quantity("50").isInteger()`, want: true},
	{name: "quantity_as_float", expr: `quantity("50.703k").asApproximateFloat()`, want: float64(50703)},
	{name: "quantity_sign", expr: `[sign(quantity("-1m")), sign(quantity("0")), sign(quantity("2Ki"))]`, want: []any{int64(-1), int64(0), int64(1)}},
	{name: "quantity_sign_is_not_a_method", expr: `quantity("1").sign()`, compileErr: "found no matching overload for 'sign'"},

	// IP: apiserver/pkg/cel/library/ip_test.go and ip.go.
	{name: "ip_parse_v4", expr: `string(ip("192.168.0.1"))`, want: "192.168.0.1"},
	{name: "ip_parse_invalid_v4", expr: `ip("192.168.0.1.0")`, evalErr: `IP Address "192.168.0.1.0" parse error during conversion from string: ParseAddr("192.168.0.1.0"): IPv4 address too long`},
	{name: "is_ip_v4", expr: `isIP("192.168.0.1")`, want: true},
	{name: "is_ip_invalid_v4", expr: `isIP("192.168.0.1.0")`, want: false},
	{name: "ip_is_canonical_v4", expr: `ip.isCanonical("127.0.0.1")`, want: true},
	{name: "ip_is_canonical_invalid", expr: `ip.isCanonical("127.0.0.1.0")`, evalErr: `IP Address "127.0.0.1.0" parse error during conversion from string: ParseAddr("127.0.0.1.0"): IPv4 address too long`},
	{name: "ip_family_v4", expr: `ip("192.168.0.1").family()`, want: int64(4)},
	{name: "ip_unspecified_v4", expr: `ip("0.0.0.0").isUnspecified()`, want: true},
	{name: "ip_loopback_v4", expr: `ip("127.0.0.1").isLoopback()`, want: true},
	{name: "ip_not_loopback_v4", expr: `ip("1.2.3.4").isLoopback()`, want: false},
	{name: "ip_link_local_multicast_v4", expr: `ip("224.0.0.1").isLinkLocalMulticast()`, want: true},
	{name: "ip_not_link_local_multicast_v4", expr: `ip("224.0.1.1").isLinkLocalMulticast()`, want: false},
	{name: "ip_link_local_unicast_v4", expr: `ip("169.254.169.254").isLinkLocalUnicast()`, want: true},
	{name: "ip_global_unicast_v4", expr: `ip("192.168.0.1").isGlobalUnicast()`, want: true},
	{name: "ip_broadcast_not_global", expr: `ip("255.255.255.255").isGlobalUnicast()`, want: false},
	{name: "ip_parse_invalid_v6", expr: `ip("2001:db8:::68")`, evalErr: `IP Address "2001:db8:::68" parse error during conversion from string: ParseAddr("2001:db8:::68"): each colon-separated field must have at least one digit (at ":68")`},
	{name: "ip_is_canonical_v6", expr: `ip.isCanonical("2001:db8::68")`, want: true},
	{name: "ip_is_canonical_uppercase", expr: `ip.isCanonical("2001:DB8::68")`, want: false},
	{name: "ip_family_v6", expr: `ip("2001:db8::68").family()`, want: int64(6)},
	{name: "ip_unspecified_v6", expr: `ip("::").isUnspecified()`, want: true},
	{name: "ip_loopback_v6", expr: `ip("::1").isLoopback()`, want: true},
	{name: "ip_link_local_multicast_v6", expr: `ip("ff02::1").isLinkLocalMulticast()`, want: true},
	{name: "ip_link_local_unicast_v6", expr: `ip("fe80::1").isLinkLocalUnicast()`, want: true},
	{name: "ip_not_link_local_unicast_v6", expr: `ip("fd80::1").isLinkLocalUnicast()`, want: false},
	{name: "ip_multicast_not_global_v6", expr: `ip("ff00::1").isGlobalUnicast()`, want: false},
	{name: "ip_mapped_v4_refused", expr: `ip("::ffff:1.2.3.4")`, evalErr: `IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed`},
	{name: "ip_zone_refused", expr: `isIP("fe80::1%eth0")`, want: false},
	{name: "is_ip_of_cidr", expr: `isIP(cidr("192.168.0.0/24"))`, compileErr: "found no matching overload for 'isIP' applied to '(net.CIDR)'"},
	{name: "ip_type", expr: `type(ip("192.168.0.1")) == net.IP`, want: true},

	// CIDR: apiserver/pkg/cel/library/cidr_test.go and cidr.go.
	{name: "cidr_parse_v4", expr: `string(cidr("192.168.0.0/24"))`, want: "192.168.0.0/24"},
	{name: "cidr_parse_invalid_v4", expr: `cidr("192.168.0.0/")`, evalErr: `network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix("192.168.0.0/"): bad bits after slash: ""`},
	{name: "cidr_contains_ip", expr: `cidr("192.168.0.0/24").containsIP(ip("192.168.0.1"))`, want: true},
	{name: "cidr_not_contains_ip", expr: `cidr("192.168.0.0/24").containsIP(ip("192.168.1.1"))`, want: false},
	{name: "cidr_contains_ip_string", expr: `cidr("192.168.0.0/24").containsIP("192.168.0.1")`, want: true},
	{name: "cidr_contains_cidr", expr: `cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/25"))`, want: true},
	{name: "cidr_contains_host", expr: `cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.1/32"))`, want: true},
	{name: "cidr_not_contains_wider", expr: `cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/23"))`, want: false},
	{name: "cidr_not_contains_cidr_string", expr: `cidr("192.168.0.0/24").containsCIDR("192.168.0.0/23")`, want: false},
	{name: "cidr_ip", expr: `string(cidr("192.168.0.1/24").ip())`, want: "192.168.0.1"},
	{name: "cidr_masked", expr: `string(cidr("192.168.0.1/24").masked())`, want: "192.168.0.0/24"},
	{name: "cidr_masked_equality", expr: `cidr('192.168.0.1/24') == cidr('192.168.0.1/24').masked()`, want: false},
	{name: "cidr_prefix_length", expr: `cidr("192.168.0.0/24").prefixLength()`, want: int64(24)},
	{name: "cidr_contains_ip_v6", expr: `cidr("2001:db8::/32").containsIP("2001:db8::1")`, want: true},
	{name: "cidr_not_contains_ip_v6", expr: `cidr("2001:db8::/32").containsIP(ip("2001:dc8::1"))`, want: false},
	{name: "cidr_contains_cidr_v6", expr: `cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/33"))`, want: true},
	{name: "cidr_masked_v6", expr: `string(cidr("2001:db8:1::/32").masked())`, want: "2001:db8::/32"},
	{name: "cidr_ip_family_v6", expr: `cidr('::1/128').ip().family()`, want: int64(6)},
	{name: "cidr_is_cidr", expr: `[isCIDR('192.168.0.0/16'), isCIDR('192.168.0.0/33'), isCIDR('::1/129')]`, want: []any{true, false, false}},
	{name: "cidr_type", expr: `type(cidr("192.168.0.0/24")) == net.CIDR`, want: true},

	// Semver: apiserver/pkg/cel/library/semver_test.go and semverlib.go.
	{name: "semver_parse", expr: `semver("1.2.3").major() * 100 + semver("1.2.3").minor() * 10 + semver("1.2.3").patch()`, want: int64(123)},
	{name: "semver_invalid", expr: `semver("v1.0")`, evalErr: "No Major.Minor.Patch elements found"},
	{name: "is_semver_full", expr: `isSemver("1.2.3-beta.1+build.1")`, want: true},
	{name: "is_semver_empty", expr: `isSemver("")`, want: false},
	{name: "is_semver_v_prefix", expr: `isSemver("v1.0.0")`, want: false},
	{name: "is_semver_whitespace", expr: `isSemver(" 1.0.0")`, want: false},
	{name: "is_semver_leading_zeros", expr: `isSemver("01.01.01")`, want: false},
	{name: "is_semver_major_only", expr: `isSemver("1")`, want: false},
	{name: "is_semver_normalize_whitespace", expr: `isSemver("1.0.0 ", true)`, want: false},
	{name: "is_semver_normalize_v", expr: `isSemver("v1.0.0", true)`, want: true},
	{name: "is_semver_normalize_zeros", expr: `isSemver("01.01.01", true)`, want: true},
	{name: "is_semver_normalize_major_minor", expr: `isSemver("1.1", true)`, want: true},
	{name: "is_semver_no_overload", expr: `isSemver([1, 2, 3])`, compileErr: "found no matching overload for 'isSemver' applied to"},
	{name: "semver_equality_normalize", expr: `semver("v01.01", true) == semver("1.1.0")`, want: true},
	{name: "semver_inequality", expr: `semver("1.2.3") == semver("1.0.0")`, want: false},
	{name: "semver_less", expr: `semver("1.0.0").isLessThan(semver("1.2.3"))`, want: true},
	{name: "semver_less_equal", expr: `semver("1.0.0").isLessThan(semver("1.0.0"))`, want: false},
	{name: "semver_greater", expr: `semver("1.2.3").isGreaterThan(semver("1.0.0"))`, want: true},
	{name: "semver_compare", expr: `[semver("1.2.3").compareTo(semver("1.2.3")), semver("1.0.0").compareTo(semver("1.2.3")), semver("1.2.3").compareTo(semver("1.0.0"))]`, want: []any{int64(0), int64(-1), int64(1)}},
	{name: "semver_prerelease_precedence", expr: `semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1")) && semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))`, want: true},

	// Format: apiserver/pkg/cel/library/format_test.go and format.go.
	{name: "format_dns1123_label_valid", expr: `format.dns1123Label().validate("my-label-name")`, want: none{}},
	{name: "format_dns1123_subdomain_valid", expr: `format.dns1123Subdomain().validate("apiextensions.k8s.io")`, want: none{}},
	{name: "format_qualified_name_valid", expr: `format.qualifiedName().validate("apiextensions.k8s.io/v1beta1")`, want: none{}},
	{name: "format_dns1123_subdomain_prefix_valid", expr: `format.dns1123SubdomainPrefix().validate("mysubdomain.prefix.-")`, want: none{}},
	{name: "format_uri_valid", expr: `format.uri().validate("http://example.com")`, want: none{}},
	{name: "format_uuid_valid", expr: `format.uuid().validate("123e4567-e89b-12d3-a456-426614174000")`, want: none{}},
	{name: "format_date_valid", expr: `format.date().validate("2021-01-01")`, want: none{}},
	{name: "format_datetime_valid", expr: `format.datetime().validate("2021-01-01T00:00:00Z")`, want: none{}},
	{name: "format_dns1123_label", expr: `format.dns1123Label().validate("contains a space")`,
		want: some{[]any{"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"}}},
	{name: "format_dns1123_subdomain", expr: `format.dns1123Subdomain().validate("contains a space")`,
		want: some{[]any{`a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}}},
	{name: "format_dns1035_label_prefix", expr: `format.dns1035LabelPrefix().validate("contains a space-")`,
		want: some{[]any{`a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`}}},
	{name: "format_qualified_name", expr: `format.qualifiedName().validate("contains a space")`,
		want: some{[]any{`name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`}}},
	{name: "format_byte_invalid", expr: `format.byte().validate("aGVsbG8")`, want: some{[]any{"invalid base64"}}},
	{name: "format_date_invalid", expr: `format.date().validate("2020-01-32")`, want: some{[]any{"invalid date"}}},
	{name: "format_datetime_invalid", expr: `format.datetime().validate("2020-01-32T00:00:00Z")`, want: some{[]any{"invalid datetime"}}},
	{name: "format_label_value_invalid", expr: `format.labelValue().validate("my-cool-label-Value!!\n\n!!!")`,
		want: some{[]any{"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"}}},
	{name: "format_named_unknown", expr: `format.named("unknown").hasValue()`, want: false},
	{name: "format_named_lookup", expr: `format.named("dns1123Label").value() == format.dns1123Label()`, want: true},
	{name: "format_named_differ", expr: `format.dns1123Label() == format.dns1123Subdomain()`, want: false},
	{name: "format_rule_and_message", expr: `format.dns1123Label().validate(self.name).value().join('\n')`, want: "must not contain dots"},

	// Authz: apiserver/pkg/cel/library/authz.go (its documentation) and
	// cost.go, with the fake authorizer of authzCases' environment.
	{name: "authz_resource_allowed", expr: `authorizer.group('').resource('pods').namespace('default').check('get').allowed()`, want: true},
	{name: "authz_resource_denied", expr: `authorizer.group('apps').resource('deployments').namespace('default').check('delete').allowed()`, want: false},
	{name: "authz_attributes", expr: `authorizer.group('apps').resource('deployments').subresource('scale').namespace('test').name('backend').check('update').reason()`,
		want: "alice update apps/*/deployments/scale ns=test name=backend"},
	{name: "authz_empty_subresource_unset", expr: `authorizer.group('example.com').resource('widgets').subresource('').check('list').reason()`,
		want: "alice list example.com/*/widgets ns= name="},
	{name: "authz_path", expr: `authorizer.path('/healthz').check('get').reason()`, want: "alice get path=/healthz"},
	{name: "authz_path_empty", expr: `authorizer.path('  ')`, evalErr: "path must not be empty"},
	{name: "authz_resource_empty", expr: `authorizer.group('apps').resource('')`, evalErr: "resource must not be empty"},
	{name: "authz_service_account", expr: `authorizer.serviceAccount('default', 'builder').group('').resource('pods').check('get').reason()`,
		want: "system:serviceaccount:default:builder [system:serviceaccounts system:serviceaccounts:default] get /*/pods ns= name="},
	{name: "authz_service_account_bad_namespace", expr: `authorizer.serviceAccount('not@a#valid!namespace', 'validname')`, evalErr: "Invalid service account namespace"},
	{name: "authz_service_account_bad_name", expr: `authorizer.serviceAccount('valid.example.com', 'invalid@*name')`, evalErr: "Invalid service account name"},
	{name: "authz_errored", expr: `[authorizer.group('').resource('broken').check('get').errored(), authorizer.group('').resource('pods').check('get').errored()]`, want: []any{true, false}},
	{name: "authz_error", expr: `authorizer.group('').resource('broken').check('get').error()`, want: "webhook unreachable"},
	{name: "authz_no_error", expr: `authorizer.group('').resource('pods').check('get').error()`, want: ""},
	{name: "authz_selectors", expr: `authorizer.group('').resource('pods').fieldSelector('spec.nodeName=mynode').labelSelector('app=example').check('list').reason()`,
		want: "alice list /*/pods ns= name= fields=spec.nodeName=mynode labels=app=example"},
	{name: "authz_request_resource", expr: `authorizer.requestResource.check('create').reason()`, want: "alice create example.annex.dev/*/environments ns=prod name=web"},
	{name: "authz_request_resource_subresource", expr: `authorizer.requestResource.subresource('status').check('update').allowed()`, want: false},

	// Optional types: validation_test.go ("optionals").
	{name: "optional_field", expr: `self.?presentObj.?presentStr == optional.of('value')`, want: true},
	{name: "optional_or_value", expr: `self.?absentObj.?absentStr.orValue('nope')`, want: "nope"},
	{name: "optional_opt_map", expr: `self.presentObj.?presentStr.optMap(v, v == 'value').hasValue()`, want: true},
	{name: "optional_map_index", expr: `self.m[?'k'].or(optional.of('nope'))`, want: some{"v"}},
	{name: "optional_list_index", expr: `self.l[?1] == optional.none()`, want: true},
	{name: "optional_of_non_zero", expr: `optional.ofNonZeroValue(duration('0s')) == optional.none()`, want: true},
	{name: "optional_map_literal", expr: `{?'k': optional.none(), 'k2': 'v2'} == {'k2': 'v2'}`, want: true},
	{name: "optional_list_literal", expr: `['a', ?optional.of('v'), 'c']`, want: []any{"a", "v", "c"}},
	{name: "optional_missing_first", expr: `self.absentObj.?absentStr == optional.none()`, evalErr: "no such key: absentObj"},

	// Two-variable comprehensions (Kubernetes 1.32+): cel-go's
	// ext/comprehensions.go documentation, which Kubernetes' CEL page links.
	{name: "two_var_all_list", expr: `[1, 2, 3].all(i, j, i < j)`, want: true},
	{name: "two_var_all_map", expr: `{'hello': 'world', 'taco': 'taco'}.all(k, v, k != v)`, want: false},
	{name: "two_var_exists", expr: `{'greeting': 'hello', 'farewell': 'goodbye'}.exists(k, v, k.startsWith('good') || v.endsWith('bye'))`, want: true},
	{name: "two_var_exists_one", expr: `[1, 1, 2, 2, 3, 3].existsOne(i, v, i == 2 && v == 2)`, want: true},
	{name: "two_var_transform_list", expr: `[1, 2, 3].transformList(i, v, (i * v) + v)`, want: []any{int64(1), int64(4), int64(9)}},
	{name: "two_var_transform_map", expr: `{'greeting': 'hello'}.transformMap(k, v, v + '!')`, want: map[any]any{"greeting": "hello!"}},
	{name: "two_var_transform_map_filter", expr: `[1, 2, 3].transformMap(i, v, i % 2 == 0, (i * v) + v)`, want: map[any]any{int64(0): int64(1), int64(2): int64(9)}},

	// What Kubernetes 1.34 does not have is not here either.
	{name: "no_cel_bind", expr: `cel.bind(x, 1, x)`, compileErr: "undeclared reference to 'cel'"},
	{name: "no_math_ext", expr: `math.greatest(1, 2)`, compileErr: "undeclared reference to 'math'"},
	{name: "no_network_is_mask", expr: `cidr('10.0.0.0/8').isMask()`, compileErr: "undeclared reference to 'isMask'"},
	{name: "no_optional_has_value_arg", expr: `optional.of(1).hasValue(1)`, compileErr: "found no matching overload for 'hasValue'"},
	{name: "homogeneous_list_literals", expr: `[1, 'a']`, compileErr: "expected type 'int' but found 'string'"},

	// JSON Patch (MutatingAdmissionPolicy): apiserver/pkg/cel/library/jsonpatch.go.
	{name: "jsonpatch_escape_key", expr: `"/metadata/labels/" + jsonpatch.escapeKey('k8s.io/my~label')`, want: "/metadata/labels/k8s.io~1my~0label"},
}

// testSelf is self in libraryCases.
var testSelf = map[string]any{
	"emptyInts":  []any{},
	"paren":      ")",
	"url":        "https://user:pass@kubernetes.io:80/docs/home?k1=a&k2=b&k2=c#anchor",
	"name":       "a.b",
	"presentObj": map[string]any{"presentStr": "value"},
	"m":          map[string]any{"k": "v"},
	"l":          []any{"a"},
}

// fakeAuthorizer allows alice to get and list, errors for the resource
// "broken", and says in its reason what it was asked.
var fakeAuthorizer = cellib.AuthorizerFunc(func(ctx context.Context, a cellib.Attributes) (cellib.Decision, string, error) {
	if ctx.Value(ctxKey{}) != "request" {
		return cellib.DecisionDeny, "", errors.New("not the request's context")
	}
	who := "<anonymous>"
	if a.User != nil {
		who = a.User.Name
		if len(a.User.Groups) > 0 {
			who += " " + fmt.Sprint(a.User.Groups)
		}
	}
	var reason string
	if a.IsResourceRequest {
		reason = fmt.Sprintf("%s %s %s/%s/%s", who, a.Verb, a.APIGroup, a.APIVersion, a.Resource)
		if a.Subresource != "" {
			reason += "/" + a.Subresource
		}
		reason += fmt.Sprintf(" ns=%s name=%s", a.Namespace, a.Name)
		if a.FieldSelector != "" || a.LabelSelector != "" {
			reason += fmt.Sprintf(" fields=%s labels=%s", a.FieldSelector, a.LabelSelector)
		}
	} else {
		reason = fmt.Sprintf("%s %s path=%s", who, a.Verb, a.Path)
	}
	if a.Resource == "broken" {
		return cellib.DecisionNoOpinion, reason, errors.New("webhook unreachable")
	}
	if a.Verb == "get" || a.Verb == "list" {
		return cellib.DecisionAllow, reason, nil
	}
	return cellib.DecisionNoOpinion, reason, nil
})

type ctxKey struct{}

// testEnv is Base plus what admission adds for policies: self, the
// authorizer variables, and jsonpatch.
func testEnv(t testing.TB) *cel.Env {
	t.Helper()
	env, err := cel.NewEnv(append(cellib.Base(), cellib.JSONPatch(),
		cel.Variable("self", cel.DynType),
		cel.Variable("authorizer", cellib.AuthorizerType),
		cel.Variable("authorizer.requestResource", cellib.ResourceCheckType))...)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func testActivation() map[string]any {
	ctx := context.WithValue(context.Background(), ctxKey{}, "request")
	alice := &filters.User{Name: "alice"}
	return map[string]any{
		"self":       testSelf,
		"authorizer": cellib.AuthorizerValue(ctx, fakeAuthorizer, alice),
		"authorizer.requestResource": cellib.RequestResourceValue(ctx, fakeAuthorizer, alice,
			cellib.RequestResource{Group: "example.annex.dev", Resource: "environments", Namespace: "prod", Name: "web"}),
	}
}

func TestLibraries(t *testing.T) {
	t.Parallel()
	if len(libraryCases) < 80 {
		t.Fatalf("only %d cases", len(libraryCases))
	}
	env := testEnv(t)
	seen := map[string]bool{}
	for _, tc := range libraryCases {
		if seen[tc.name] {
			t.Fatalf("duplicate case %s", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prg, err := compile(env, tc.expr)
			if tc.compileErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.compileErr) {
					t.Fatalf("compile %s: err = %v, want %q", tc.expr, err, tc.compileErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("compile %s: %v", tc.expr, err)
			}
			out, _, err := prg.Eval(testActivation())
			if tc.evalErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.evalErr) {
					t.Fatalf("%s = %v, %v; want error %q", tc.expr, out, err, tc.evalErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.expr, err)
			}
			if got := native(out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%s = %#v, want %#v", tc.expr, got, tc.want)
			}
		})
	}
}

// compile type-checks and plans expr as admission does: optimized, with
// cost tracking.
func compile(env *cel.Env, expr string) (cel.Program, error) {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	return env.Program(ast, cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost), cel.CostLimit(1_000_000))
}

// native turns a result into plain Go values: int64, uint64, float64,
// string, bool, []any, map[any]any, time values, none and some.
func native(v ref.Val) any {
	switch t := v.(type) {
	case types.Bool, types.Int, types.Uint, types.Double, types.String:
		return t.Value()
	case types.Duration:
		return t.Duration
	case types.Timestamp:
		return t.Time.UTC().Format(time.RFC3339Nano)
	case *types.Optional:
		if !t.HasValue() {
			return none{}
		}
		return some{native(t.GetValue())}
	case traits.Mapper:
		m := map[any]any{}
		for it := t.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			m[native(k)] = native(t.Get(k))
		}
		return m
	case traits.Lister:
		l := []any{}
		for it := t.Iterator(); it.HasNext() == types.True; {
			l = append(l, native(it.Next()))
		}
		return l
	}
	return fmt.Sprintf("%T(%v)", v, v.Value())
}
