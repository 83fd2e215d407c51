package typed_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
	"github.com/annexapi/annex/typed"
)

type quantity string

func (quantity) OpenAPISchemaType() []string { return []string{"string"} }
func (quantity) OpenAPISchemaFormat() string { return "quantity" }

type common struct {
	Owner string `json:"owner" annex:"minLength=1,maxLength=63" doc:"Who owns it."`
}

type sample struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            struct {
		common
		Color    string            `json:"color" annex:"enum=red|green|blue"`
		Replicas int32             `json:"replicas,omitempty" annex:"minimum=0,maximum=10,default=1"`
		Ratio    *float64          `json:"ratio"`
		Tags     []string          `json:"tags,omitempty" annex:"maxItems=5"`
		Labels   map[string]string `json:"labels,omitempty"`
		Since    time.Time         `json:"since,omitempty"`
		Memory   quantity          `json:"memory,omitempty"`
		Free     json.RawMessage   `json:"free,omitempty"`
		Secret   []byte            `json:"secret,omitempty"`
		CPU      typed.Quantity    `json:"cpu,omitempty"`
		Skipped  string            `json:"-"`
		hidden   string
	} `json:"spec"`
}

func TestSchemaOf(t *testing.T) {
	t.Parallel()
	p, err := typed.SchemaOf[sample]()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(p)
	want := `{"type":"object","required":["spec"],"properties":{"apiVersion":{"type":"string"},"kind":{"type":"string"},"metadata":{"type":"object"},` +
		`"spec":{"type":"object","required":["owner","color"],"properties":{"color":{"type":"string","enum":["red","green","blue"]},` +
		`"cpu":{"pattern":"^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$","anyOf":[{"type":"integer"},{"type":"string"}],"x-kubernetes-int-or-string":true},` +
		`"free":{"x-kubernetes-preserve-unknown-fields":true},"labels":{"type":"object","additionalProperties":{"type":"string"}},` +
		`"memory":{"type":"string","format":"quantity"},"owner":{"description":"Who owns it.","type":"string","maxLength":63,"minLength":1},` +
		`"ratio":{"type":"number"},"replicas":{"type":"integer","format":"int32","default":1,"maximum":10,"minimum":0},` +
		`"secret":{"type":"string","format":"byte"},"since":{"type":"string","format":"date-time"},"tags":{"type":"array","maxItems":5,"items":{"type":"string"}}}}}}`
	if string(got) != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
	if errs := schema.ValidateStructural(p); len(errs) != 0 {
		t.Errorf("the derived schema is not structural: %v", errs)
	}
	_, _ = json.Marshal(sample{}.Spec.hidden)
}

func TestSchemaOfRefusals(t *testing.T) {
	t.Parallel()
	type recursive struct {
		Next *recursive `json:"next"`
	}
	type badMarker struct {
		N int `json:"n" annex:"minimum=ten"`
	}
	type unknownMarker struct {
		N int `json:"n" annex:"smallish"`
	}
	type channel struct {
		C chan int `json:"c"`
	}
	for name, f := range map[string]func() error{
		"recursive":      func() error { _, err := typed.SchemaOf[recursive](); return err },
		"bad_marker":     func() error { _, err := typed.SchemaOf[badMarker](); return err },
		"unknown_marker": func() error { _, err := typed.SchemaOf[unknownMarker](); return err },
		"channel":        func() error { _, err := typed.SchemaOf[channel](); return err },
	} {
		if err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestQuantityTakesStringsAndNumbers(t *testing.T) {
	t.Parallel()
	var v struct {
		A, B typed.Quantity
	}
	if err := json.Unmarshal([]byte(`{"A":"250m","B":2}`), &v); err != nil || v.A != "250m" || v.B != "2" {
		t.Errorf("got %+v, %v", v, err)
	}
	if err := json.Unmarshal([]byte(`{"A":true}`), &v); err == nil {
		t.Error("a boolean quantity accepted")
	}
}
