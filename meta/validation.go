// This file holds name and label validation with the exact messages of
// k8s.io/apimachinery release-1.32 (pkg/util/validation, pkg/api/validation,
// pkg/api/validation/path), and the generateName helper of k8s.io/apiserver
// (pkg/storage/names). The character classes are written out by hand rather
// than as regular expressions: they run on every write and every selector.

package meta

import (
	"crypto/rand"
	"fmt"
	"io"
	"strings"
)

// Limits of names and labels.
const (
	DNS1123LabelMaxLength     = 63
	DNS1123SubdomainMaxLength = 253
	DNS1035LabelMaxLength     = 63
	QualifiedNameMaxLength    = 63
	LabelValueMaxLength       = 63
	// TotalAnnotationSizeLimitB is the limit on the summed length of all
	// annotation keys and values of one object.
	TotalAnnotationSizeLimitB = 256 * (1 << 10)
	// FieldManagerMaxLength is the limit on managedFields[].manager.
	FieldManagerMaxLength = 128
	// MaxSubresourceNameLength is the limit on managedFields[].subresource.
	MaxSubresourceNameLength = 256
)

const (
	dns1123LabelFmt          = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	dns1123LabelErrMsg       = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
	dns1123SubdomainFmt      = dns1123LabelFmt + "(\\." + dns1123LabelFmt + ")*"
	dns1123SubdomainErrorMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
	dns1035LabelFmt          = "[a-z]([-a-z0-9]*[a-z0-9])?"
	dns1035LabelErrMsg       = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character"
	qualifiedNameFmt         = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
	qualifiedNameErrMsg      = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	labelValueFmt            = "(" + qualifiedNameFmt + ")?"
	labelValueErrMsg         = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)

func maxLenError(n int) string { return fmt.Sprintf("must be no more than %d characters", n) }

const emptyError = "must be non-empty"

// regexError is k8s's RegexError, double spaces included.
func regexError(msg, re string, examples ...string) string {
	if len(examples) == 0 {
		return msg + " (regex used for validation is '" + re + "')"
	}
	var b strings.Builder
	b.WriteString(msg)
	b.WriteString(" (e.g. ")
	for i, ex := range examples {
		if i > 0 {
			b.WriteString(" or ")
		}
		b.WriteString("'" + ex + "', ")
	}
	b.WriteString("regex used for validation is '" + re + "')")
	return b.String()
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
func isAlnum(c byte) bool      { return isLowerAlnum(c) || c >= 'A' && c <= 'Z' }

// isDNS1123Label matches ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$.
func isDNS1123Label(s string) bool {
	if s == "" || !isLowerAlnum(s[0]) || !isLowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if !isLowerAlnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// isDNS1123SubdomainSyntax matches dns1123SubdomainFmt, ignoring length.
func isDNS1123SubdomainSyntax(s string) bool {
	for {
		i := strings.IndexByte(s, '.')
		if i < 0 {
			return isDNS1123Label(s)
		}
		if !isDNS1123Label(s[:i]) {
			return false
		}
		s = s[i+1:]
	}
}

// isQualifiedNamePart matches ^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$.
func isQualifiedNamePart(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// IsDNS1123Label tests for a DNS (RFC 1123) label: what namespaces and many
// names must be. It returns the problems, or nil.
func IsDNS1123Label(s string) []string {
	var errs []string
	if len(s) > DNS1123LabelMaxLength {
		errs = append(errs, maxLenError(DNS1123LabelMaxLength))
	}
	if !isDNS1123Label(s) {
		if isDNS1123SubdomainSyntax(s) {
			errs = append(errs, "must not contain dots")
		} else {
			errs = append(errs, regexError(dns1123LabelErrMsg, dns1123LabelFmt, "my-name", "123-abc"))
		}
	}
	return errs
}

// IsDNS1123Subdomain tests for a DNS (RFC 1123) subdomain: the default rule
// for object names. It returns the problems, or nil.
func IsDNS1123Subdomain(s string) []string {
	var errs []string
	if len(s) > DNS1123SubdomainMaxLength {
		errs = append(errs, maxLenError(DNS1123SubdomainMaxLength))
	}
	if !isDNS1123SubdomainSyntax(s) {
		errs = append(errs, regexError(dns1123SubdomainErrorMsg, dns1123SubdomainFmt, "example.com"))
	}
	return errs
}

// IsDNS1035Label tests for a DNS (RFC 1035) label, which must start with a
// letter. It returns the problems, or nil.
func IsDNS1035Label(s string) []string {
	var errs []string
	if len(s) > DNS1035LabelMaxLength {
		errs = append(errs, maxLenError(DNS1035LabelMaxLength))
	}
	if !isDNS1123Label(s) || s[0] < 'a' || s[0] > 'z' {
		errs = append(errs, regexError(dns1035LabelErrMsg, dns1035LabelFmt, "my-name", "abc-123"))
	}
	return errs
}

// IsQualifiedName tests for a qualified name: an optional DNS subdomain
// prefix and '/', then a name of at most 63 characters. Label keys,
// annotation keys and finalizers are qualified names. It returns the
// problems, or nil.
func IsQualifiedName(s string) []string {
	var errs []string
	name := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		prefix := s[:i]
		name = s[i+1:]
		if strings.IndexByte(name, '/') >= 0 {
			return []string{"a qualified name " + regexError(qualifiedNameErrMsg, qualifiedNameFmt, "MyName", "my.name", "123-abc") +
				" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"}
		}
		if prefix == "" {
			errs = append(errs, "prefix part "+emptyError)
		} else {
			for _, m := range IsDNS1123Subdomain(prefix) {
				errs = append(errs, "prefix part "+m)
			}
		}
	}
	if name == "" {
		errs = append(errs, "name part "+emptyError)
	} else if len(name) > QualifiedNameMaxLength {
		errs = append(errs, "name part "+maxLenError(QualifiedNameMaxLength))
	}
	if !isQualifiedNamePart(name) {
		errs = append(errs, "name part "+regexError(qualifiedNameErrMsg, qualifiedNameFmt, "MyName", "my.name", "123-abc"))
	}
	return errs
}

// IsValidLabelValue tests for a label value: empty, or at most 63 characters
// shaped like a qualified name without prefix. It returns the problems, or nil.
func IsValidLabelValue(s string) []string {
	var errs []string
	if len(s) > LabelValueMaxLength {
		errs = append(errs, maxLenError(LabelValueMaxLength))
	}
	if s != "" && !isQualifiedNamePart(s) {
		errs = append(errs, regexError(labelValueErrMsg, labelValueFmt, "MyValue", "my_value", "12345"))
	}
	return errs
}

// ValidatePathSegmentName tests that a name can be a URL path segment and a
// storage key segment: not "." or "..", no '/' and no '%'. With prefix (a
// generateName), only the contents are checked. It returns the problems, or nil.
func ValidatePathSegmentName(name string, prefix bool) []string {
	if !prefix {
		switch name {
		case ".":
			return []string{`may not be '.'`}
		case "..":
			return []string{`may not be '..'`}
		}
	}
	var errs []string
	if strings.Contains(name, "/") {
		errs = append(errs, `may not contain '/'`)
	}
	if strings.Contains(name, "%") {
		errs = append(errs, `may not contain '%'`)
	}
	return errs
}

// maskTrailingDash lets a generateName end in '-' by validating it as if the
// last two characters were "a", as k8s does.
func maskTrailingDash(name string) string {
	if len(name) > 1 && strings.HasSuffix(name, "-") {
		return name[:len(name)-2] + "a"
	}
	return name
}

// NameIsDNSSubdomain is the name rule of most resources: a DNS subdomain.
// With prefix, name is a generateName and may end in '-'.
func NameIsDNSSubdomain(name string, prefix bool) []string {
	if prefix {
		name = maskTrailingDash(name)
	}
	return IsDNS1123Subdomain(name)
}

// NameIsDNSLabel is the name rule of namespaces: a DNS label.
func NameIsDNSLabel(name string, prefix bool) []string {
	if prefix {
		name = maskTrailingDash(name)
	}
	return IsDNS1123Label(name)
}

// NameIsDNS1035Label is the name rule of services: a DNS-1035 label.
func NameIsDNS1035Label(name string, prefix bool) []string {
	if prefix {
		name = maskTrailingDash(name)
	}
	return IsDNS1035Label(name)
}

// Name generation, as k8s.io/apiserver's SimpleNameGenerator.
const (
	// MaxGeneratedNameLength is how much of a generateName base is kept.
	MaxGeneratedNameLength = 63 - generatedSuffixLength
	generatedSuffixLength  = 5
	generatedAlphabet      = "bcdfghjklmnpqrstvwxz2456789"
)

// GenerateName returns base, cut to 58 bytes, followed by 5 random characters
// from "bcdfghjklmnpqrstvwxz2456789" (no vowels, so no words). Randomness
// comes from r, or crypto/rand when r is nil; an error from r makes it fall
// back to crypto/rand.
func GenerateName(base string, r io.Reader) string {
	if len(base) > MaxGeneratedNameLength {
		base = base[:MaxGeneratedNameLength]
	}
	if r == nil {
		r = rand.Reader
	}
	var buf [generatedSuffixLength]byte
	out := make([]byte, 0, len(base)+generatedSuffixLength)
	out = append(out, base...)
	for tries := 0; len(out) < len(base)+generatedSuffixLength; tries++ {
		if tries == 8 {
			r = rand.Reader // r gives errors or only rejected bytes
		}
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			r = rand.Reader
			continue
		}
		for _, b := range buf {
			// Reject bytes beyond the largest multiple of the alphabet size
			// so that every character is equally likely.
			if int(b) >= 256-256%len(generatedAlphabet) {
				continue
			}
			out = append(out, generatedAlphabet[int(b)%len(generatedAlphabet)])
			if len(out) == len(base)+generatedSuffixLength {
				break
			}
		}
	}
	return string(out)
}
