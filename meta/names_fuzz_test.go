package meta_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/annexapi/annex/meta"
)

// The name rules as regular expressions, written from Kubernetes'
// apimachinery validation: an oracle independent of meta's hand-written
// matchers.
var (
	dns1123LabelRE     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1123SubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	dns1035LabelRE     = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	qualifiedPartRE    = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
)

func validQualifiedName(s string) bool {
	name := s
	if prefix, rest, ok := strings.Cut(s, "/"); ok {
		if prefix == "" || len(prefix) > 253 || !dns1123SubdomainRE.MatchString(prefix) {
			return false
		}
		name = rest
	}
	return len(name) <= 63 && qualifiedPartRE.MatchString(name)
}

// FuzzNameValidation checks every name rule against its regular
// expression, and the promises the handlers rely on: a valid object name is
// a valid path segment (so it never reaches storage as "..") and a
// generated name from a valid name, or one with a trailing '-', is valid.
func FuzzNameValidation(f *testing.F) {
	for _, s := range []string{"", "a", "a-b", "-a", "a-", "A", "a.b", "a..b", ".", "..", "a/b", "a%b", "example.com/Name", "/a", "a/", "a/b/c",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a.", 126) + "a", "1abc", "ab_c", "é", "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		check := func(rule string, errs []string, valid bool) {
			t.Helper()
			if (len(errs) == 0) != valid {
				t.Fatalf("%s(%q) = %q, want valid %v", rule, s, errs, valid)
			}
			for _, e := range errs {
				if e == "" {
					t.Fatalf("%s(%q): an empty message", rule, s)
				}
			}
		}
		label := len(s) <= 63 && dns1123LabelRE.MatchString(s)
		subdomain := len(s) <= 253 && dns1123SubdomainRE.MatchString(s)
		check("IsDNS1123Label", meta.IsDNS1123Label(s), label)
		check("IsDNS1123Subdomain", meta.IsDNS1123Subdomain(s), subdomain)
		check("IsDNS1035Label", meta.IsDNS1035Label(s), len(s) <= 63 && dns1035LabelRE.MatchString(s))
		check("IsValidLabelValue", meta.IsValidLabelValue(s), s == "" || len(s) <= 63 && qualifiedPartRE.MatchString(s))
		check("IsQualifiedName", meta.IsQualifiedName(s), validQualifiedName(s))
		check("NameIsDNSLabel", meta.NameIsDNSLabel(s, false), label)
		check("NameIsDNSSubdomain", meta.NameIsDNSSubdomain(s, false), subdomain)
		segment := s != "." && s != ".." && !strings.ContainsAny(s, "/%")
		check("ValidatePathSegmentName", meta.ValidatePathSegmentName(s, false), segment)
		if subdomain && !segment {
			t.Fatalf("%q is a valid name but not a path segment", s)
		}
		// A generateName may end in '-'. (NameIsDNSSubdomain(s, true) accepts
		// more, "A-" among them, as k8s's maskTrailingDash does; the name
		// generated from such a base then fails validation, as in k8s.)
		if base := strings.TrimSuffix(s, "-"); s == "" || len(meta.IsDNS1123Subdomain(base)) == 0 {
			g := meta.GenerateName(s, bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
			if errs := meta.NameIsDNSSubdomain(g, false); len(errs) > 0 {
				t.Fatalf("GenerateName(%q) = %q: %q", s, g, errs)
			}
		}
	})
}
