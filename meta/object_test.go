package meta

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// jsonEqual compares two JSON texts as values.
func jsonEqual(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %v\n%s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("JSON differs\n got %s\nwant %s", got, want)
	}
}

func TestTimeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   Time
		want string
	}{
		{"zero_is_null", Time{}, `null`},
		{"utc_seconds", NewTime(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)), `"2024-05-01T12:00:00Z"`},
		{"drops_fraction", NewTime(time.Date(2024, 5, 1, 12, 0, 0, 999999999, time.UTC)), `"2024-05-01T12:00:00Z"`},
		{"converts_to_utc", NewTime(time.Date(2024, 5, 1, 14, 0, 0, 0, time.FixedZone("x", 2*3600))), `"2024-05-01T12:00:00Z"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("Marshal = %s, want %s", b, tt.want)
			}
		})
	}
}

func TestTimeUnmarshal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    time.Time
		wantErr bool
	}{
		{name: "null", in: `null`},
		{name: "utc", in: `"2024-05-01T12:00:00Z"`, want: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)},
		{name: "offset", in: `"2024-05-01T14:00:00+02:00"`, want: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)},
		{name: "fraction", in: `"2024-05-01T12:00:00.5Z"`, want: time.Date(2024, 5, 1, 12, 0, 0, 5e8, time.UTC)},
		{name: "empty_string", in: `""`, wantErr: true},
		{name: "not_rfc3339", in: `"2024-05-01 12:00:00"`, wantErr: true},
		{name: "number", in: `12`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tm := NewTime(time.Now()) // must be overwritten
			err := json.Unmarshal([]byte(tt.in), &tm)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && !tm.Time.Equal(tt.want) {
				t.Errorf("got %v, want %v", tm.Time, tt.want)
			}
		})
	}
}

func TestObjectMetaZeroJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"creationTimestamp":null}` {
		t.Errorf("zero ObjectMeta = %s", b)
	}
}

// A k8s-shaped object's metadata decodes and re-encodes to the same JSON.
func TestObjectMetaRoundTrip(t *testing.T) {
	t.Parallel()
	const in = `{
	 "name":"my-first-flunder","generateName":"my-","namespace":"default",
	 "uid":"4b4ba4a4-7b2e-4a9b-9a4e-0b3e1f7b1c11","resourceVersion":"7","generation":3,
	 "creationTimestamp":"2024-05-01T12:00:00Z","deletionTimestamp":"2024-05-02T12:00:00Z",
	 "deletionGracePeriodSeconds":0,
	 "labels":{"app":"web","empty":""},"annotations":{"note":"x"},
	 "ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"d","uid":"u","controller":true,"blockOwnerDeletion":false},
	                    {"apiVersion":"v1","kind":"ConfigMap","name":"c","uid":"u2"}],
	 "finalizers":["example.com/f"],
	 "managedFields":[{"manager":"kubectl","operation":"Apply","apiVersion":"wardle.example.com/v1alpha1",
	   "time":"2024-05-01T12:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:reference":{}}},"subresource":"status"}]}`
	var m ObjectMeta
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	if m.DeletionGracePeriodSeconds == nil || *m.DeletionGracePeriodSeconds != 0 {
		t.Error("deletionGracePeriodSeconds 0 lost")
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, out, []byte(in))
}

func TestWatchEventJSON(t *testing.T) {
	t.Parallel()
	ev := WatchEvent{Type: WatchAdded, Object: json.RawMessage(`{"kind":"Flunder"}`)}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"type":"ADDED","object":{"kind":"Flunder"}}` {
		t.Errorf("got %s", b)
	}
}

func TestEncodeBookmark(t *testing.T) {
	t.Parallel()
	b, err := EncodeBookmark("Flunder", "wardle.example.com/v1alpha1", "42", map[string]string{InitialEventsAnnotation: "true"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"Flunder","apiVersion":"wardle.example.com/v1alpha1","metadata":{"resourceVersion":"42","creationTimestamp":null,"annotations":{"k8s.io/initial-events-end":"true"}}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestListJSON(t *testing.T) {
	t.Parallel()
	l := NewList("FlunderList", "wardle.example.com/v1alpha1")
	l.Metadata.ResourceVersion = "12345"
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"FlunderList","apiVersion":"wardle.example.com/v1alpha1","metadata":{"resourceVersion":"12345"},"items":[]}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestPartialObjectMetadataListJSON(t *testing.T) {
	t.Parallel()
	l := PartialObjectMetadataList{
		TypeMeta: TypeMeta{Kind: KindPartialObjectMetadataList, APIVersion: MetaGroupVersion},
		Metadata: ListMeta{ResourceVersion: "12345"},
		Items: []PartialObjectMetadata{{
			TypeMeta: TypeMeta{Kind: KindPartialObjectMetadata, APIVersion: MetaGroupVersion},
			Metadata: ObjectMeta{Name: "a", Namespace: "default"},
		}},
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, b, []byte(`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"12345"},
	 "items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"default","creationTimestamp":null}}]}`))
}

func TestDeleteOptionsDecode(t *testing.T) {
	t.Parallel()
	const body = `{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0,
	 "preconditions":{"uid":"u1","resourceVersion":"5"},"propagationPolicy":"Background","dryRun":["All"],"orphanDependents":false}`
	var o DeleteOptions
	dec := json.NewDecoder(bytes.NewReader([]byte(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		t.Fatal(err)
	}
	if o.Kind != "DeleteOptions" || o.APIVersion != "v1" || o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 ||
		o.Preconditions == nil || *o.Preconditions.UID != "u1" || *o.Preconditions.ResourceVersion != "5" ||
		o.PropagationPolicy == nil || *o.PropagationPolicy != DeletePropagationBackground ||
		len(o.DryRun) != 1 || o.DryRun[0] != DryRunAll || o.OrphanDependents == nil || *o.OrphanDependents {
		t.Errorf("decoded %+v", o)
	}
	out, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, out, []byte(body))
}

func TestOptionsDecodeStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		into any
	}{
		{"list", `{"labelSelector":"a=b","fieldSelector":"metadata.name=x","watch":true,"allowWatchBookmarks":true,
		  "resourceVersion":"1","resourceVersionMatch":"NotOlderThan","timeoutSeconds":30,"limit":500,"continue":"c","sendInitialEvents":true}`, &ListOptions{}},
		{"get", `{"kind":"GetOptions","apiVersion":"meta.k8s.io/v1","resourceVersion":"0"}`, &GetOptions{}},
		{"create", `{"dryRun":["All"],"fieldManager":"m","fieldValidation":"Strict"}`, &CreateOptions{}},
		{"update", `{"dryRun":["All"],"fieldManager":"m","fieldValidation":"Warn"}`, &UpdateOptions{}},
		{"patch", `{"dryRun":["All"],"force":true,"fieldManager":"m","fieldValidation":"Ignore"}`, &PatchOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dec := json.NewDecoder(bytes.NewReader([]byte(tt.body)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(tt.into); err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(tt.into)
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, out, []byte(tt.body))
		})
	}
}
