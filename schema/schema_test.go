package schema

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestParseYAML(t *testing.T) {
	t.Parallel()
	p, err := ParseYAML([]byte(`
type: object
properties:
  spec:
    type: object
    required: [owner]
    x-kubernetes-validations:
    - rule: "self.replicas >= 0"
      message: must not be negative
    properties:
      owner: {type: string, minLength: 1}
      tier: {type: string, enum: [dev, staging, prod], default: dev}
      replicas: {type: integer, minimum: 0}
      labels:
        type: object
        additionalProperties: {type: string}
      extra:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`))
	if err != nil {
		t.Fatal(err)
	}
	spec := p.Properties["spec"]
	if spec.Required[0] != "owner" || spec.XValidations[0].Rule != "self.replicas >= 0" {
		t.Fatalf("spec = %+v", spec)
	}
	tier := spec.Properties["tier"]
	if string(tier.Default) != `"dev"` || len(tier.Enum) != 3 || string(tier.Enum[2]) != `"prod"` {
		t.Fatalf("tier = %+v", tier)
	}
	if m := spec.Properties["replicas"].Minimum; m == nil || *m != 0 {
		t.Fatalf("replicas.minimum = %v", m)
	}
	ap := spec.Properties["labels"].AdditionalProperties
	if ap == nil || !ap.Allows || ap.Schema == nil || ap.Schema.Type != "string" {
		t.Fatalf("labels.additionalProperties = %+v", ap)
	}
	if x := spec.Properties["extra"].XPreserveUnknownFields; x == nil || !*x {
		t.Fatal("preserve-unknown-fields lost")
	}
	// Round trip through JSON keeps the document.
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := ParseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(q)
	if string(b) != string(b2) {
		t.Fatalf("round trip changed the schema:\n%s\n%s", b, b2)
	}
}

func TestParseRejectsUnknownKeywords(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"type: object\nproperites: {}\n", "{\"type\":\"object\",\"requird\":[\"a\"]}", "type: [unclosed"} {
		if _, err := ParseYAML([]byte(doc)); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("ParseYAML(%q) = %v, want ErrInvalidSchema", doc, err)
		}
	}
}

func TestAdditionalPropertiesBool(t *testing.T) {
	t.Parallel()
	p, err := ParseJSON([]byte(`{"type":"object","additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.AdditionalProperties == nil || p.AdditionalProperties.Allows || p.AdditionalProperties.Schema != nil {
		t.Fatalf("got %+v", p.AdditionalProperties)
	}
	b, _ := json.Marshal(p)
	if string(b) != `{"type":"object","additionalProperties":false}` {
		t.Fatalf("marshal = %s", b)
	}
}
