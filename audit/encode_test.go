package audit

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/annexapi/annex/meta"
)

// goldenEvents are events as the filter writes them, and the corners of the
// encoding: empty and nil collections, escapes, invalid UTF-8, raw objects
// that need compacting and HTML escaping, Status details.
func goldenEvents() map[string]Event {
	at := time.Date(2026, 11, 23, 21, 19, 44, 86670123, time.FixedZone("x", 3600))
	rc := int64(7)
	base := func() Event {
		return Event{Kind: "Event", APIVersion: APIVersion, Level: LevelMetadata, AuditID: "8031363e-4db5-4c9b-94f9-dd0e2e97c877",
			Stage: StageResponseComplete, RequestURI: "/apis/test.annex.dev/v1/namespaces/ns/widgets?fieldSelector=a%3Db&limit=5",
			Verb: "create", User: UserInfo{Username: "admin", Groups: []string{"system:masters", "system:authenticated"},
				Extra: map[string][]string{"authentication.kubernetes.io/credential-id": {"X509SHA256=7e58"}}},
			SourceIPs: []string{"127.0.0.1"}, UserAgent: "kubectl/v1.33.0 (linux/amd64) kubernetes/abc",
			ObjectRef:      &ObjectReference{Resource: "widgets", Namespace: "ns", Name: "w1", APIGroup: "test.annex.dev", APIVersion: "v1"},
			ResponseStatus: &ResponseStatus{Code: 201}, RequestReceivedTimestamp: MicroTime{at}, StageTimestamp: MicroTime{at.Add(3 * time.Millisecond)},
			Annotations: map[string]string{"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": "",
				StageLatenciesAnnotation: "authentication=0.271ms,audit=0.432ms"}}
	}
	out := map[string]Event{"zero": {}, "metadata_create": base()}

	e := base()
	e.Stage, e.Level = StageRequestReceived, LevelRequestResponse
	e.ResponseStatus, e.Annotations, e.StageTimestamp = nil, nil, e.RequestReceivedTimestamp
	e.RequestObject = json.RawMessage(" {\n  \"kind\": \"Widget\",\n  \"spec\": {\"a\": [1, 2.5e3, true, null], \"html\": \"<b>&amp;</b> \u2028\u2029\"}\n} ")
	out["request_with_raw_needing_compaction_and_escapes"] = e

	e = base()
	e.ResponseObject = json.RawMessage(`{"kind":"Widget","metadata":{"name":"w1"}}`)
	e.RequestObject = json.RawMessage(`{"kind":"Widget"}`)
	out["response_object"] = e

	e = base()
	e.ImpersonatedUser = &UserInfo{Username: "bob", UID: "u-1", Groups: []string{}, Extra: map[string][]string{"nil": nil, "empty": {}, "b": {"1", "2"}}}
	e.User = UserInfo{}
	e.ObjectRef = &ObjectReference{}
	e.SourceIPs = []string{}
	out["impersonated_and_empty_values"] = e

	e = base()
	e.ResponseStatus = &ResponseStatus{Metadata: meta.ListMeta{ResourceVersion: "12", Continue: "c", RemainingItemCount: &rc},
		Status: "Failure", Message: `widgets "w1" is forbidden: <denied> & "quoted"`, Reason: meta.StatusReasonForbidden,
		Details: &meta.StatusDetails{Name: "w1", Group: "test.annex.dev", Kind: "widgets",
			Causes: []meta.StatusCause{{Type: "FieldValueInvalid", Message: "bad\tvalue", Field: "spec.x"}}}, Code: 403}
	out["status_with_details"] = e

	e = base()
	e.RequestURI = "/x?q=\x00\x01\x1f\"\\\b\f\n\r\t\x7f<>&\u2028\u2029é\xff\xfe世界"
	e.UserAgent = "\xc3\x28 broken utf-8 \xe2\x82"
	e.Annotations = map[string]string{"z": "1", "a": "\u2029", "<k>": "&", "é": "x"}
	e.ObjectRef = &ObjectReference{Subresource: "status", UID: "uid", ResourceVersion: "5"}
	out["escapes"] = e
	return out
}

// TestAppendEvent_equals_encoding_json: the hand-written encoder writes what
// json.Marshal writes, byte for byte, for every golden event.
func TestAppendEvent_equals_encoding_json(t *testing.T) {
	t.Parallel()
	for name, ev := range goldenEvents() {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(&ev)
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendEvent(nil, &ev)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("appendEvent differs from json.Marshal:\n got %s\nwant %s", got, want)
			}
			// Appending keeps what was there.
			got, _ = appendEvent([]byte("prefix"), &ev)
			if !bytes.Equal(got, append([]byte("prefix"), want...)) {
				t.Fatalf("appendEvent does not append")
			}
		})
	}
}

func TestAppendEvent_invalid_raw_object_fails_as_json(t *testing.T) {
	t.Parallel()
	ev := Event{RequestObject: json.RawMessage(`{"a":`)}
	if _, err := json.Marshal(&ev); err == nil {
		t.Fatal("json.Marshal accepted invalid raw JSON")
	}
	if _, err := appendEvent(nil, &ev); err == nil {
		t.Fatal("appendEvent accepted invalid raw JSON")
	}
}

// FuzzAppendEvent compares the encoder with json.Marshal on arbitrary
// strings and raw objects.
func FuzzAppendEvent(f *testing.F) {
	f.Add("/apis/x", "kubectl", "k", "v", []byte(`{"a":1}`))
	f.Add("\xff<\u2028", "\x00\t", "\"", "\\", []byte(" [ \"<&>\" , 1 ] "))
	f.Fuzz(func(t *testing.T, uri, agent, key, value string, raw []byte) {
		ev := Event{Kind: "Event", RequestURI: uri, UserAgent: agent, Annotations: map[string]string{key: value, "k2": uri},
			User: UserInfo{Username: key, Extra: map[string][]string{value: {agent}}}, RequestObject: raw}
		want, werr := json.Marshal(&ev)
		got, gerr := appendEvent(nil, &ev)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("errors differ: json %v, appendEvent %v", werr, gerr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("differs:\n got %s\nwant %s", got, want)
		}
	})
}

func TestAppendRFC3339Micro_matches_time_format(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2026, 11, 23, 22, 44, 6, 123456789, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2024, 2, 29, 7, 8, 9, 1000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(1700000000, 999).UTC(),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Nanosecond),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Microsecond),
		time.Date(2000, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC),
	} {
		if got, want := string(appendRFC3339Micro(nil, tm)), tm.Format(RFC3339Micro); got != want {
			t.Errorf("%v: got %s, want %s", tm, got, want)
		}
	}
}

// BenchmarkAppendEvent encodes the events a GET writes at Metadata level,
// RequestReceived and ResponseComplete, as the example's log holds them.
func BenchmarkAppendEvent(b *testing.B) {
	at := time.Date(2026, 11, 26, 2, 56, 11, 677308000, time.UTC)
	ev := Event{Kind: "Event", APIVersion: APIVersion, Level: LevelMetadata, AuditID: "e6436061-94b2-435d-adcf-d634ffaf18b5",
		Stage: StageRequestReceived, RequestURI: "/apis/platform.example.com/v1beta1/namespaces/default/environments/obj-8303", Verb: "get",
		User: UserInfo{Username: "admin", Groups: []string{"system:masters", "system:authenticated"},
			Extra: map[string][]string{"authentication.kubernetes.io/credential-id": {"X509SHA256=3c738f90dc29d1686b6f8c0c83aefdcb9746c459d55c24399ee15bb6276a7f11"}}},
		SourceIPs: []string{"127.0.0.1"}, UserAgent: "Go-http-client/2.0",
		ObjectRef:                &ObjectReference{Resource: "environments", Namespace: "default", Name: "obj-8303", APIGroup: "platform.example.com", APIVersion: "v1beta1"},
		RequestReceivedTimestamp: MicroTime{at}, StageTimestamp: MicroTime{at}}
	rc := ev
	rc.Stage, rc.StageTimestamp, rc.ResponseStatus = StageResponseComplete, MicroTime{at.Add(312 * time.Microsecond)}, &ResponseStatus{Code: 200}
	rc.Annotations = map[string]string{"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": "",
		StageLatenciesAnnotation: "authentication=0.004ms,audit=0.010ms,impersonation=0.000ms,flowcontrol=0.001ms,authorization=0.001ms,storage=0.020ms"}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = appendEvent(buf[:0], &ev)
		buf, _ = appendEvent(buf[:0], &rc)
	}
	b.SetBytes(int64(len(buf)))
}
