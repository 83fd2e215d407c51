// This file holds the value types of metav1 that objects embed: Time,
// MicroTime and Duration, each with the JSON form and the OpenAPI schema
// (OpenAPISchemaType, OpenAPISchemaFormat, as k8s.io's types have them,
// which package typed reads) of its metav1 namesake.

package meta

import (
	"encoding/json"
	"time"
)

// Time is a timestamp that marshals as RFC 3339 in UTC with second precision
// ("2024-05-01T12:00:00Z"), and as null when zero, as metav1.Time does. It
// unmarshals null (to zero) and any RFC 3339 string. Its schema is kube's:
// a string of format date-time.
type Time struct {
	time.Time
}

// NewTime returns t as a Time.
func NewTime(t time.Time) Time { return Time{t} }

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) { return marshalTime(t.Time, time.RFC3339) }

// UnmarshalJSON implements json.Unmarshaler.
func (t *Time) UnmarshalJSON(b []byte) error { return unmarshalTime(&t.Time, b) }

// Rfc3339Copy returns the time cut to whole seconds, as it reads back from JSON.
func (t Time) Rfc3339Copy() Time { return Time{t.UTC().Truncate(time.Second)} }

// OpenAPISchemaType is the schema's type: string.
func (Time) OpenAPISchemaType() []string { return []string{"string"} }

// OpenAPISchemaFormat is the schema's format: date-time.
func (Time) OpenAPISchemaFormat() string { return "date-time" }

// RFC3339Micro is MicroTime's layout: RFC 3339 with six fractional digits.
const RFC3339Micro = "2006-01-02T15:04:05.000000Z07:00"

// MicroTime is Time with microsecond precision
// ("2024-05-01T12:00:00.123456Z"), as metav1.MicroTime (events, leases):
// null when zero; it unmarshals null and any RFC 3339 string. Its schema
// is a string of format date-time.
type MicroTime struct {
	time.Time
}

// NewMicroTime returns t as a MicroTime.
func NewMicroTime(t time.Time) MicroTime { return MicroTime{t} }

// MarshalJSON implements json.Marshaler.
func (t MicroTime) MarshalJSON() ([]byte, error) { return marshalTime(t.Time, RFC3339Micro) }

// UnmarshalJSON implements json.Unmarshaler.
func (t *MicroTime) UnmarshalJSON(b []byte) error { return unmarshalTime(&t.Time, b) }

// OpenAPISchemaType is the schema's type: string.
func (MicroTime) OpenAPISchemaType() []string { return []string{"string"} }

// OpenAPISchemaFormat is the schema's format: date-time.
func (MicroTime) OpenAPISchemaFormat() string { return "date-time" }

func marshalTime(t time.Time, layout string) ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	b := make([]byte, 0, len(layout)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, layout)
	return append(b, '"'), nil
}

func unmarshalTime(t *time.Time, b []byte) error {
	if string(b) == "null" {
		*t = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	pt, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return err
	}
	*t = pt.UTC()
	return nil
}

// Duration is a time.Duration that marshals as its String ("1h30m0s") and
// unmarshals what time.ParseDuration takes (and null, to zero), as
// metav1.Duration. Its schema is a string.
type Duration struct {
	time.Duration
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		d.Duration = 0
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	pd, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = pd
	return nil
}

// OpenAPISchemaType is the schema's type: string.
func (Duration) OpenAPISchemaType() []string { return []string{"string"} }

// OpenAPISchemaFormat is the schema's format: none.
func (Duration) OpenAPISchemaFormat() string { return "" }
