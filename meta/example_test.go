package meta_test

import (
	"fmt"

	"github.com/annexapi/annex/meta"
)

func ExampleParseLabelSelector() {
	sel, err := meta.ParseLabelSelector("tier in (web, api), !canary, env=prod")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sel.String())
	fmt.Println(sel.Matches(map[string]string{"env": "prod", "tier": "web"}))
	fmt.Println(sel.Matches(map[string]string{"env": "prod", "tier": "web", "canary": "1"}))

	_, err = meta.ParseLabelSelector("env=prod,")
	fmt.Println(err)
	// Output:
	// !canary,env=prod,tier in (api,web)
	// true
	// false
	// found '', expected: identifier after ','
}

func ExampleParseFieldSelector() {
	sel, err := meta.ParseFieldSelector("metadata.name=foo,metadata.namespace!=kube-system")
	if err != nil {
		fmt.Println(err)
		return
	}
	name, ok := sel.RequiresExactMatch("metadata.name")
	fmt.Println(name, ok)
	fmt.Println(sel.Matches(map[string]string{"metadata.name": "foo", "metadata.namespace": "default"}))
	// Output:
	// foo true
	// true
}

func ExampleValidateObjectMeta() {
	m := meta.ObjectMeta{Name: "Foo", Namespace: "default"}
	causes := meta.ValidateObjectMeta(&m, true, nil)
	st := meta.NewInvalid(meta.GroupKind{Group: "wardle.example.com", Kind: "Flunder"}, m.Name, causes)
	fmt.Println(st.Code, st.Details.Causes[0].Field)
	fmt.Println(st.Message[:60])
	// Output:
	// 422 metadata.name
	// Flunder.wardle.example.com "Foo" is invalid: metadata.name:
}
