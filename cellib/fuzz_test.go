package cellib

import (
	"errors"
	"strings"
	"testing"

	"cel.dev/cel-go/common/types"
)

// FuzzQuantity: any string parses or fails without panicking, and a parsed
// quantity equals itself, is unchanged by adding zero, and minus itself is
// zero (or too far apart in exponents to align, which parse never makes).
func FuzzQuantity(f *testing.F) {
	for _, s := range []string{"0", "-", ".", "12Mi", "1.5Gi", "1e-10", "50.703k", "9999999999999999999999999999999999999G",
		"-9223372036854775808", "8Ei", "1e2147483647", "1e4294967296", "+.5e-9", "10Mm", "1Ki5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := parseQuantity(s)
		if err != nil {
			if !errors.Is(err, errQuantityFormat) && !errors.Is(err, errQuantityNumeric) && !errors.Is(err, errQuantitySuffix) {
				t.Fatalf("parseQuantity(%q): unexpected error %v", s, err)
			}
			return
		}
		if q.cmp(q) != 0 {
			t.Fatalf("%q: not equal to itself", s)
		}
		if sum, ok := q.add(quantityVal{}).(quantityVal); !ok || sum.cmp(q) != 0 {
			t.Fatalf("%q + 0 = %v", s, sum)
		}
		diff := q.sub(q)
		if d, ok := diff.(quantityVal); ok {
			if d.sign() != 0 {
				t.Fatalf("%q - itself: sign %d", s, d.sign())
			}
		} else if !types.IsError(diff) || !strings.Contains(diff.(*types.Err).Error(), "out of range") {
			t.Fatalf("%q - itself = %v", s, diff)
		}
	})
}

// FuzzSemver: any string parses (strictly or normalized) or fails without
// panicking, and a parsed version's string parses back to an equal one.
func FuzzSemver(f *testing.F) {
	for _, s := range []string{"1.2.3", "v1.2", "01.01.01", "1.2.3-alpha.1+build.1", "1.2.3-01", "1..3", "", "18446744073709551616.0.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func(string) (*semverVal, error){parseSemver, normalizeSemver} {
			v, err := parse(s)
			if err != nil {
				continue
			}
			back, err := parseSemver(v.String())
			if err != nil || back.compare(v) != 0 || back.String() != v.String() {
				t.Fatalf("%q -> %q -> %v, %v", s, v.String(), back, err)
			}
		}
	})
}
