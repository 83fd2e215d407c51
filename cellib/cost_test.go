package cellib_test

import (
	"strings"
	"testing"

	"cel.dev/cel-go/common/cost"
)

// TestRuntimeCost checks the runtime cost of library calls against
// Kubernetes' formulas (apiserver/pkg/cel/library/cost.go) and the costs
// its tests expect (apiextensions-apiserver/pkg/apiserver/schema/cel/
// validation_test.go, "cost for extended lib calculated correctly").
// Literals cost nothing, variables and selections 1, has() nothing.
func TestRuntimeCost(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	cases := []struct {
		expr string
		want uint64
	}{
		// One comparison per element (validation_test.go: 4).
		{`[1, 2, 3, 4].isSorted()`, 4},
		// A tenth per character of the string: 23 characters.
		{`url('https:://kubernetes.io/')`, 3},
		// validation_test.go: 4, in a rule whose != costs nothing in cel-go v0.26.
		{`url('https:://kubernetes.io/').getHostname()`, 4},
		// ceil((1 + 24) * 0.1) traversals of the string times ceil(6 * 0.25) for the pattern.
		{`'this is a 123 string 456'.find('[0-9]+')`, 6},
		// The variable, path, a check (350,000), allowed.
		{`authorizer.path('/healthz').check('get').allowed()`, 350_003},
		// cidr(): ceil(1.4); containsIP with a string: a /24 is 3 bytes, ceil(0.6), plus ceil(1.1) to parse.
		{`cidr('192.168.0.0/24').containsIP('192.168.0.1')`, 5},
		// Two cidr() of 2, and ceil(0.6) + ceil(0.3) + 1 to compare prefixes.
		{`cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))`, 7},
		// format.dns1123Label() 1; validate: ceil(1.4) times ceil(30 * 0.25) for the label pattern.
		{`format.dns1123Label().validate('my-label-name')`, 17},
		// A 20-character selector: a list (10), a traversal (2), a requirement per two characters (10 * 50).
		{`authorizer.group('').resource('pods').fieldSelector('spec.nodeName=mynode').check('list').allowed()`, 4 + 512 + 350_000},
		// Two parses of ceil(0.3) and a comparison.
		{`quantity('1Gi').isLessThan(quantity('2Gi'))`, 3},
		// has() is free, as in Kubernetes; the variable is not.
		{`has(self.m)`, 1},
	}
	for _, tc := range cases {
		prg, err := compile(env, tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		_, det, err := prg.Eval(testActivation())
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if got := *det.ActualCost(); got != tc.want {
			t.Errorf("cost of %s = %d, want %d", tc.expr, got, tc.want)
		}
	}
}

// TestCheckCostLimit: two authorization checks fit in an expression's
// per-call limit (1,000,000), three do not.
func TestCheckCostLimit(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	two := `authorizer.path('/a').check('get').allowed() && authorizer.path('/b').check('get').allowed()`
	three := two + ` && authorizer.path('/c').check('get').allowed()`
	prg, err := compile(env, two)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := prg.Eval(testActivation()); err != nil {
		t.Fatalf("two checks: %v", err)
	}
	prg, err = compile(env, three)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := prg.Eval(testActivation()); err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Fatalf("three checks: err = %v, want cost limit exceeded", err)
	}
}

// TestEstimatedCost checks that the estimates reach cel-go's estimator.
func TestEstimatedCost(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	cases := []struct {
		expr     string
		min, max uint64
	}{
		// ceil((3 + 1) * 0.1) * ceil(6 * 0.25).
		{`'abc'.find('[0-9]+')`, 2, 2},
		// The variable, path, check.
		{`authorizer.path('/healthz').check('get')`, 350_002, 350_002},
		// cidr() of 10 characters: 1; comparing two addresses of 4 to 16
		// bytes: ceil(0.8..3.2); parsing 8 characters: 1.
		{`cidr('10.0.0.0/8').containsIP('10.0.0.1')`, 1 + 1 + 1, 1 + 4 + 1},
	}
	for _, tc := range cases {
		ast, iss := env.Compile(tc.expr)
		if iss.Err() != nil {
			t.Fatal(iss.Err())
		}
		est, err := env.EstimateCost(ast, noSizes{})
		if err != nil {
			t.Fatal(err)
		}
		if est.Min != tc.min || est.Max != tc.max {
			t.Errorf("estimate of %s = [%d, %d], want [%d, %d]", tc.expr, est.Min, est.Max, tc.min, tc.max)
		}
	}
}

// noSizes knows no sizes: estimates come from the expression alone.
type noSizes struct{}

func (noSizes) EstimateSize(cost.AstNode) *cost.SizeEstimate { return nil }
func (noSizes) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}
