package typed_test

import (
	"encoding/json"
	"slices"
	"strings"
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

type valueTypes struct {
	Time       meta.Time         `json:"time"`
	TimePtr    *meta.Time        `json:"timePtr,omitempty"`
	Micro      meta.MicroTime    `json:"micro"`
	Every      meta.Duration     `json:"every"`
	Port       typed.IntOrString `json:"port"`
	Memory     typed.Quantity    `json:"memory"`
	Conditions []meta.Condition  `json:"conditions,omitempty"`
}

// TestSchemaOfMetaTypes: the value types objects embed have kube's
// schemas (e2e's TestMetaSchemasMatchKube compares them with a
// kube-apiserver's published ones).
func TestSchemaOfMetaTypes(t *testing.T) {
	t.Parallel()
	p, err := typed.SchemaOf[valueTypes]()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"time":    `{"type":"string","format":"date-time"}`,
		"timePtr": `{"type":"string","format":"date-time"}`,
		"micro":   `{"type":"string","format":"date-time"}`,
		"every":   `{"type":"string"}`,
		"port":    `{"anyOf":[{"type":"integer"},{"type":"string"}],"x-kubernetes-int-or-string":true}`,
		"memory":  `{"pattern":"^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$","anyOf":[{"type":"integer"},{"type":"string"}],"x-kubernetes-int-or-string":true}`,
	} {
		if got, _ := json.Marshal(p.Properties[name]); string(got) != want {
			t.Errorf("%s\n got %s\nwant %s", name, got, want)
		}
	}
	cond := p.Properties["conditions"].Items
	if cond == nil || cond.Type != "object" || !slices.Equal(cond.Required, []string{"type", "status", "lastTransitionTime", "reason", "message"}) {
		t.Fatalf("conditions: %+v", p.Properties["conditions"])
	}
	if r := cond.Properties["reason"]; r.Pattern != `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$` || *r.MaxLength != 1024 || *r.MinLength != 1 {
		t.Errorf("conditions[].reason: %+v", r)
	}
	if lt := cond.Properties["lastTransitionTime"]; lt.Type != "string" || lt.Format != "date-time" {
		t.Errorf("conditions[].lastTransitionTime: %+v", lt)
	}
	if errs := schema.ValidateStructural(p); len(errs) != 0 {
		t.Errorf("not structural: %v", errs)
	}
}

// TestValueTypesJSON: the value types marshal as kube's do and read back.
func TestValueTypesJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)
	v := valueTypes{Time: meta.NewTime(at), Micro: meta.NewMicroTime(at), Every: meta.Duration{Duration: 90 * time.Minute},
		Port: typed.FromString("http"), Memory: "1Gi"}
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"time":"2024-05-01T12:00:00Z","micro":"2024-05-01T12:00:00.123456Z","every":"1h30m0s","port":"http","memory":"1Gi"}`
	if string(got) != want {
		t.Errorf("marshal\n got %s\nwant %s", got, want)
	}
	var back valueTypes
	if err := json.Unmarshal([]byte(`{"time":"2024-05-01T14:00:00+02:00","timePtr":null,"micro":null,"every":"2s","port":8080,"memory":2}`), &back); err != nil {
		t.Fatal(err)
	}
	if !back.Time.Equal(at.Truncate(time.Second)) || back.TimePtr != nil || !back.Micro.IsZero() || back.Every.Duration != 2*time.Second ||
		back.Port != typed.FromInt32(8080) || back.Port.String() != "8080" || back.Memory != "2" {
		t.Errorf("unmarshal: %+v", back)
	}
	if err := json.Unmarshal([]byte(`{"every":"soon"}`), &back); err == nil {
		t.Error("a malformed duration was accepted")
	}
}

type celSpec struct {
	Targets  []string `json:"targets" cel:"rule='self.all(t, self.exists_one(u, u == t))',message='targets must be unique, each once'"`
	Schedule string   `json:"schedule" annex:"pattern='^(a|b){1,3}$',maxLength=20" cel:"rule=self != 'never',reason=FieldValueForbidden,rule='self.size() > 0',message='it\\'s empty'"`
	Window   window   `json:"window,omitempty" doc:"The field's own words."`
	Plain    window   `json:"plain,omitempty"`
	Extra    string   `json:"extra,omitempty" annex:"default='a,b'"`
	Labels   []string `json:"labels,omitempty" annex:"listType=set,maxItems=3"`
}

type window struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

func (window) ValidationRules() []schema.ValidationRule {
	return []schema.ValidationRule{{Rule: "self.start <= self.end", Message: "start must not be after end"}}
}

func (*window) SchemaDescription() string { return "A window of hours." }

// TestSchemaOfRulesAndDescriptions: cel tags, quoted marker values with
// commas and quotes, and the methods a type says its rules and
// description with.
func TestSchemaOfRulesAndDescriptions(t *testing.T) {
	t.Parallel()
	p, err := typed.SchemaOf[celSpec]()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(p)
	want := `{"type":"object","required":["targets","schedule"],"properties":{` +
		`"extra":{"type":"string","default":"a,b"},` +
		`"labels":{"type":"array","maxItems":3,"items":{"type":"string"},"x-kubernetes-list-type":"set"},` +
		`"plain":{"description":"A window of hours.","type":"object","required":["start","end"],"properties":{"end":{"type":"integer","format":"int64"},"start":{"type":"integer","format":"int64"}},"x-kubernetes-validations":[{"rule":"self.start \u003c= self.end","message":"start must not be after end"}]},` +
		`"schedule":{"type":"string","maxLength":20,"pattern":"^(a|b){1,3}$","x-kubernetes-validations":[{"rule":"self != 'never'","reason":"FieldValueForbidden"},{"rule":"self.size() \u003e 0","message":"it's empty"}]},` +
		`"targets":{"type":"array","items":{"type":"string"},"x-kubernetes-validations":[{"rule":"self.all(t, self.exists_one(u, u == t))","message":"targets must be unique, each once"}]},` +
		`"window":{"description":"The field's own words.","type":"object","required":["start","end"],"properties":{"end":{"type":"integer","format":"int64"},"start":{"type":"integer","format":"int64"}},"x-kubernetes-validations":[{"rule":"self.start \u003c= self.end","message":"start must not be after end"}]}}}`
	if string(got) != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
	if errs := schema.ValidateStructural(p); len(errs) != 0 {
		t.Errorf("not structural: %v", errs)
	}
}

// TestMarkerErrors: a malformed tag names the marker, what is wrong, and
// how to write it.
func TestMarkerErrors(t *testing.T) {
	t.Parallel()
	type commaInPattern struct {
		S string `json:"s" annex:"pattern=^(a|b){1,3}$"`
	}
	type commaThenMore struct {
		S string `json:"s" annex:"pattern=^x{1,3}$,maxLength=5"`
	}
	type unclosed struct {
		S string `json:"s" annex:"pattern='^a"`
	}
	type afterQuote struct {
		S string `json:"s" annex:"pattern='^a'b"`
	}
	type notNumber struct {
		N int `json:"n" annex:"minimum=ten"`
	}
	type flagWithValue struct {
		N int `json:"n" annex:"required=yes"`
	}
	type noValue struct {
		N int `json:"n" annex:"maximum"`
	}
	type unknown struct {
		N int `json:"n" annex:"smallish"`
	}
	type celBeforeRule struct {
		N int `json:"n" cel:"message=hi"`
	}
	type celComma struct {
		N []int `json:"n" cel:"rule=self.all(x, x > 0)"`
	}
	type celReason struct {
		N int `json:"n" cel:"rule=self > 0,reason=Bad"`
	}
	for _, c := range []struct {
		name string
		err  func() error
		want string
	}{
		{"comma_in_a_value", func() error { _, err := typed.SchemaOf[commaInPattern](); return err },
			`field S: annex marker "3}$" is unknown; a value with a comma must be quoted: pattern='^(a|b){1,3}$'`},
		{"comma_then_a_known_marker", func() error { _, err := typed.SchemaOf[commaThenMore](); return err },
			`field S: annex marker "3}$" is unknown; a value with a comma must be quoted: pattern='^x{1,3}$'`},
		{"unclosed_quote", func() error { _, err := typed.SchemaOf[unclosed](); return err },
			`field S: annex marker pattern: the quoted value has no closing quote; write pattern='...', with \' for a quote inside`},
		{"text_after_quote", func() error { _, err := typed.SchemaOf[afterQuote](); return err },
			`field S: annex marker pattern: "b" follows the closing quote; end the value with ' and separate markers with commas, with \' for a quote inside`},
		{"not_a_number", func() error { _, err := typed.SchemaOf[notNumber](); return err },
			`field N: annex marker minimum: "ten" is not a number; write minimum=10 or minimum=0.5`},
		{"flag_with_value", func() error { _, err := typed.SchemaOf[flagWithValue](); return err },
			`field N: annex marker required takes no value: write required alone`},
		{"missing_value", func() error { _, err := typed.SchemaOf[noValue](); return err },
			`field N: annex marker maximum needs a value: write maximum=<value>`},
		{"unknown_marker", func() error { _, err := typed.SchemaOf[unknown](); return err },
			`field N: annex marker "smallish" is unknown; the markers are required, optional, nullable`},
		{"cel_message_before_rule", func() error { _, err := typed.SchemaOf[celBeforeRule](); return err },
			`field N: cel marker message comes before any rule; write rule='<CEL expression>',message='hi' first`},
		{"cel_rule_with_comma", func() error { _, err := typed.SchemaOf[celComma](); return err },
			`field N: cel marker "x > 0)" is unknown; a value with a comma must be quoted: rule='self.all(x, x > 0)'`},
		{"cel_bad_reason", func() error { _, err := typed.SchemaOf[celReason](); return err },
			`field N: cel marker reason: "Bad" is not FieldValueInvalid, FieldValueForbidden, FieldValueRequired or FieldValueDuplicate; write reason=FieldValueForbidden`},
	} {
		err := c.err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant …%s…", c.name, err, c.want)
		}
	}
}
