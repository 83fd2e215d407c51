// This file holds Kubernetes' ordering of version names.

package rest

import (
	"strconv"
	"strings"
)

// CompareVersions orders version names by Kubernetes' priority, as
// discovery lists a CRD's versions: GA before beta before alpha, then the
// higher major number, then the higher minor one (v2 > v1 > v1beta2 >
// v1beta1 > v1alpha1); names of another form come after, in alphabetical
// order. It returns a positive number when a comes first, negative when b
// does, 0 when they are equal.
func CompareVersions(a, b string) int {
	if a == b {
		return 0
	}
	am, at, an, aok := parseVersion(a)
	bm, bt, bn, bok := parseVersion(b)
	switch {
	case !aok && !bok:
		return strings.Compare(b, a)
	case !aok:
		return -1
	case !bok:
		return 1
	case at != bt:
		return at - bt
	case am != bm:
		return am - bm
	}
	return an - bn
}

// parseVersion splits v<major>[alpha|beta<minor>]; typ is 2 for GA, 1 for
// beta, 0 for alpha.
func parseVersion(v string) (major, typ, minor int, ok bool) {
	rest, found := strings.CutPrefix(v, "v")
	if !found {
		return 0, 0, 0, false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || rest[0] == '0' {
		return 0, 0, 0, false
	}
	major, _ = strconv.Atoi(rest[:i])
	rest = rest[i:]
	if rest == "" {
		return major, 2, 0, true
	}
	for t, q := range []string{"alpha", "beta"} {
		if r, found := strings.CutPrefix(rest, q); found {
			n, err := strconv.Atoi(r)
			if err != nil || n <= 0 || r[0] == '0' {
				return 0, 0, 0, false
			}
			return major, t, n, true
		}
	}
	return 0, 0, 0, false
}
