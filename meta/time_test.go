package meta

import (
	"encoding/json"
	"testing"
	"time"
)

func TestMicroTimeAndDurationJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2024, 5, 1, 14, 0, 0, 123456789, time.FixedZone("x", 2*3600))
	for _, c := range []struct {
		name string
		in   any
		want string
	}{
		{"micro_zero_is_null", MicroTime{}, `null`},
		{"micro_utc_microseconds", NewMicroTime(at), `"2024-05-01T12:00:00.123456Z"`},
		{"micro_whole_second", NewMicroTime(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)), `"2024-05-01T12:00:00.000000Z"`},
		{"duration", Duration{90 * time.Minute}, `"1h30m0s"`},
		{"duration_zero", Duration{}, `"0s"`},
	} {
		b, err := json.Marshal(c.in)
		if err != nil || string(b) != c.want {
			t.Errorf("%s: Marshal = %s, %v; want %s", c.name, b, err, c.want)
		}
	}
	var m MicroTime
	if err := json.Unmarshal([]byte(`"2024-05-01T14:00:00.5+02:00"`), &m); err != nil || !m.Equal(time.Date(2024, 5, 1, 12, 0, 0, 5e8, time.UTC)) {
		t.Errorf("MicroTime: %v, %v", m, err)
	}
	if err := json.Unmarshal([]byte(`null`), &m); err != nil || !m.IsZero() {
		t.Errorf("MicroTime null: %v, %v", m, err)
	}
	var d Duration
	if err := json.Unmarshal([]byte(`"2m3s"`), &d); err != nil || d.Duration != 123*time.Second {
		t.Errorf("Duration: %v, %v", d, err)
	}
	for _, bad := range []string{`"soon"`, `5`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("Duration %s accepted", bad)
		}
	}
	if err := json.Unmarshal([]byte(`"yesterday"`), &m); err == nil {
		t.Error("MicroTime accepted a non-RFC 3339 string")
	}
}

// TestSchemaMethods: the value types name kube's OpenAPI types (package
// typed reads these methods).
func TestSchemaMethods(t *testing.T) {
	t.Parallel()
	type named interface {
		OpenAPISchemaType() []string
		OpenAPISchemaFormat() string
	}
	for name, c := range map[string]struct {
		v      named
		format string
	}{"Time": {Time{}, "date-time"}, "MicroTime": {MicroTime{}, "date-time"}, "Duration": {Duration{}, ""}} {
		if ty := c.v.OpenAPISchemaType(); len(ty) != 1 || ty[0] != "string" || c.v.OpenAPISchemaFormat() != c.format {
			t.Errorf("%s: %v %q", name, ty, c.v.OpenAPISchemaFormat())
		}
	}
}
