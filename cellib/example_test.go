package cellib_test

import (
	"context"
	"fmt"

	"cel.dev/cel-go/cel"

	"github.com/annexapi/annex/cellib"
	"github.com/annexapi/annex/filters"
)

// A rule copied from a CustomResourceDefinition, in an environment of
// Kubernetes' libraries.
func ExampleBase() {
	env, err := cel.NewEnv(append(cellib.Base(), cel.Variable("self", cel.DynType))...)
	if err != nil {
		panic(err)
	}
	ast, iss := env.Compile(`quantity(self.memory).isLessThan(quantity('2Gi')) && isURL(self.endpoint)`)
	if iss.Err() != nil {
		panic(iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		panic(err)
	}
	for _, self := range []map[string]any{
		{"memory": "1536Mi", "endpoint": "https://example.com/hook"},
		{"memory": "3Gi", "endpoint": "https://example.com/hook"},
	} {
		out, _, err := prg.Eval(map[string]any{"self": self})
		fmt.Println(out, err)
	}
	// Output:
	// true <nil>
	// false <nil>
}

// The authorizer variable of a policy, checked by the server's authorizer
// (here one that lets alice read).
func ExampleAuthorizerValue() {
	env, err := cel.NewEnv(append(cellib.Base(), cel.Variable("authorizer", cellib.AuthorizerType))...)
	if err != nil {
		panic(err)
	}
	ast, iss := env.Compile(`authorizer.group('apps').resource('deployments').namespace('prod').check('get').allowed()`)
	if iss.Err() != nil {
		panic(iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		panic(err)
	}
	readers := cellib.AuthorizerFunc(func(_ context.Context, a cellib.Attributes) (cellib.Decision, string, error) {
		if a.User != nil && a.User.Name == "alice" && a.Verb == "get" {
			return cellib.DecisionAllow, "alice reads", nil
		}
		return cellib.DecisionNoOpinion, "", nil
	})
	for _, name := range []string{"alice", "bob"} {
		authorizer := cellib.AuthorizerValue(context.Background(), readers, &filters.User{Name: name})
		out, _, err := prg.Eval(map[string]any{"authorizer": authorizer})
		fmt.Println(name, out, err)
	}
	// Output:
	// alice true <nil>
	// bob false <nil>
}
