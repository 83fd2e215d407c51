package admission

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/annexapi/annex/meta"
	"github.com/prometheus/client_golang/prometheus"
)

func TestChainOrderAndReinvocation(t *testing.T) {
	t.Parallel()
	var order []string
	mut := func(name string) MutatorFunc {
		return func(ctx context.Context, a *Attributes) error {
			order = append(order, name)
			if name == "m2" && !a.IsReinvoke() {
				a.RequestReinvocation()
			}
			return nil
		}
	}
	val := ValidatorFunc(func(ctx context.Context, a *Attributes) error {
		order = append(order, "v")
		return errors.New("nope")
	})
	var stages []string
	c, err := New(Config{Mutators: []Mutator{mut("m1"), mut("m2")}, Validators: []Validator{val},
		Registerer: prometheus.NewRegistry(), ObserveRejection: func(s string) { stages = append(stages, s) }})
	if err != nil {
		t.Fatal(err)
	}
	a := &Attributes{Operation: Create, Resource: "things", Group: "g", Name: "x", Object: map[string]any{}}
	if err := c.Mutate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	err = c.Validate(context.Background(), a)
	if got := strings.Join(order, ","); got != "m1,m2,m1,m2,v" {
		t.Fatalf("order = %s", got)
	}
	var st *meta.Status
	if !errors.As(err, &st) || st.Code != 403 || st.Message != `things.g "x" is forbidden: nope` {
		t.Fatalf("err = %v", err)
	}
	if len(stages) != 1 || stages[0] != StageValidating {
		t.Fatalf("stages = %v", stages)
	}
}

func TestNamespaceLifecycle(t *testing.T) {
	t.Parallel()
	calls := 0
	getter := NamespaceGetterFunc(func(ctx context.Context, name string) (map[string]any, error) {
		calls++
		switch name {
		case "active":
			return map[string]any{"status": map[string]any{"phase": "Active"}}, nil
		case "dying":
			return map[string]any{"status": map[string]any{"phase": "Terminating"}}, nil
		}
		return nil, nil
	})
	l, err := NewNamespaceLifecycle(NamespaceLifecycleConfig{Namespaces: getter})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, ns, op string
		code         int32
		msg          string
	}{
		{name: "active", ns: "active", op: Create},
		{name: "missing", ns: "gone", op: Create, code: 404, msg: `namespaces "gone" not found`},
		{name: "terminating", ns: "dying", op: Create, code: 403, msg: `environments.example.annex.dev "e" is forbidden: unable to create new content in namespace dying because it is being terminated`},
		{name: "update_not_checked", ns: "gone", op: Update},
	}
	for _, tc := range cases {
		a := envAttrs(tc.op, `{"metadata":{"name":"e"}}`)
		a.Namespace = tc.ns
		err := l.Validate(context.Background(), a)
		var st *meta.Status
		if tc.code == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.As(err, &st) || st.Code != tc.code || st.Message != tc.msg {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
	before := calls
	a := envAttrs(Create, `{"metadata":{"name":"e"}}`)
	a.Namespace = "active"
	_ = l.Validate(context.Background(), a)
	if calls != before {
		t.Fatalf("active namespace not cached: %d lookups", calls-before)
	}
}

// BenchmarkValidate compares pure admission of a create with schema
// validation and two CEL policies against an empty chain.
func BenchmarkValidate(b *testing.B) {
	obj := `{"apiVersion":"example.annex.dev/v1","kind":"Environment","metadata":{"name":"e","labels":{"owner":"al"}},"spec":{"owner":"al","tier":"prod","replicas":3}}`
	run := func(b *testing.B, c *Chain) {
		b.ReportAllocs()
		for b.Loop() {
			a := envAttrs(Create, obj)
			if err := c.Mutate(context.Background(), a); err != nil {
				b.Fatal(err)
			}
			if err := c.Validate(context.Background(), a); err != nil {
				b.Fatal(err)
			}
		}
	}
	empty, _ := New(Config{})
	b.Run("none", func(b *testing.B) { run(b, empty) })
	b.Run("schema_and_two_policies", func(b *testing.B) { run(b, exampleChain(b)) })
}

// BenchmarkBuildExampleChain measures what is done once per configuration,
// not per request: building the CEL environments (Kubernetes' libraries)
// and compiling the example's schema rules and policies.
func BenchmarkBuildExampleChain(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		exampleChain(b)
	}
}
