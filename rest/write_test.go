package rest

import (
	"net/http"
	"strings"
	"testing"
)

func TestCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.create(t, "ns1", "taken", nil, "alice")
	const coll = envBase + "/namespaces/ns1/environments"
	tests := []struct {
		name        string
		path        string
		body        string
		contentType string
		code        int
		message     string // for failures: the Status message
		reason      string
		check       func(t *testing.T, obj map[string]any)
	}{
		{
			name: "created_with_server_fields", path: coll,
			body: `{"metadata":{"name":"a","uid":"client","generation":7},"spec":{"owner":"bob","replicas":3}}`,
			code: http.StatusCreated,
			check: func(t *testing.T, obj map[string]any) {
				if obj["kind"] != "Environment" || obj["apiVersion"] != "platform.example.com/v1alpha1" {
					t.Errorf("type meta = %v %v", obj["kind"], obj["apiVersion"])
				}
				md := obj["metadata"].(map[string]any)
				if md["namespace"] != "ns1" || md["uid"] == "client" || md["uid"] == "" || md["resourceVersion"] == "" {
					t.Errorf("metadata = %v", md)
				}
				if md["generation"] != float64(1) {
					t.Errorf("generation = %v, want 1", md["generation"])
				}
				if _, ok := md["creationTimestamp"].(string); !ok {
					t.Errorf("creationTimestamp missing: %v", md)
				}
				if fieldAt(obj, "spec", "replicas") != float64(3) {
					t.Errorf("spec = %v", obj["spec"])
				}
			},
		},
		{
			name: "generate_name", path: coll, body: `{"metadata":{"generateName":"gen-"}}`, code: http.StatusCreated,
			check: func(t *testing.T, obj map[string]any) {
				n, _ := fieldAt(obj, "metadata", "name").(string)
				if !strings.HasPrefix(n, "gen-") || len(n) != len("gen-")+5 {
					t.Errorf("generated name = %q", n)
				}
			},
		},
		{
			name: "namespace_mismatch", path: coll, body: `{"metadata":{"name":"b","namespace":"other"}}`,
			code: http.StatusBadRequest, reason: "BadRequest",
			message: "the namespace of the provided object does not match the namespace sent on the request",
		},
		{
			name: "wrong_kind", path: coll, body: `{"kind":"Other","metadata":{"name":"b"}}`,
			code: http.StatusUnprocessableEntity, reason: "Invalid",
			message: `Environment.platform.example.com "b" is invalid: kind: Invalid value: "Other": must be Environment`,
		},
		{
			name: "wrong_api_version", path: coll, body: `{"apiVersion":"platform.example.com/v1","metadata":{"name":"b"}}`,
			code: http.StatusBadRequest, reason: "BadRequest",
			message: "the API version in the data (platform.example.com/v1) does not match the expected API version (platform.example.com/v1alpha1)",
		},
		{
			name: "invalid_name", path: coll, body: `{"metadata":{"name":"Bad_Name"}}`,
			code: http.StatusUnprocessableEntity, reason: "Invalid",
			message: `Environment.platform.example.com "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		},
		{
			name: "missing_name", path: coll, body: `{"spec":{}}`,
			code: http.StatusUnprocessableEntity, reason: "Invalid",
			message: `Environment.platform.example.com "" is invalid: metadata.name: Required value: name or generateName is required`,
		},
		{
			name: "strategy_validation", path: coll, body: `{"metadata":{"name":"neg"},"spec":{"replicas":-1}}`,
			code: http.StatusUnprocessableEntity, reason: "Invalid",
			message: `Environment.platform.example.com "neg" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`,
		},
		{
			name: "resource_version_set", path: coll, body: `{"metadata":{"name":"rv","resourceVersion":"5"}}`,
			code: http.StatusInternalServerError, reason: "",
			message: "resourceVersion should not be set on objects to be created",
		},
		{
			name: "already_exists", path: coll, body: `{"metadata":{"name":"taken"}}`,
			code: http.StatusConflict, reason: "AlreadyExists",
			message: `environments.platform.example.com "taken" already exists`,
		},
		{
			name: "unsupported_media_type", path: coll, body: `name: x`, contentType: "text/plain",
			code: http.StatusUnsupportedMediaType, reason: "UnsupportedMediaType",
			message: "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
		},
		{
			name: "not_json", path: coll, body: `[1]`,
			code: http.StatusBadRequest, reason: "BadRequest",
		},
		{
			name: "invalid_dry_run", path: coll + "?dryRun=Some", body: `{"metadata":{"name":"d"}}`,
			code: http.StatusUnprocessableEntity, reason: "Invalid",
			message: `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: supported values: "All"`,
		},
		{
			name: "dry_run", path: coll + "?dryRun=All", body: `{"metadata":{"name":"dry"}}`, code: http.StatusCreated,
			check: func(t *testing.T, obj map[string]any) {
				if fieldAt(obj, "metadata", "uid") == nil || fieldAt(obj, "metadata", "resourceVersion") != nil {
					t.Errorf("dry-run metadata = %v", obj["metadata"])
				}
				if r := e.do(t, "GET", coll+"/dry", ""); r.code != http.StatusNotFound {
					t.Errorf("dry-run object stored: %d", r.code)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r response
			if tc.contentType != "" {
				r = e.do(t, "POST", tc.path, tc.body, "Content-Type", tc.contentType)
			} else {
				r = e.do(t, "POST", tc.path, tc.body)
			}
			if r.code != tc.code {
				t.Fatalf("code = %d, want %d: %s", r.code, tc.code, r.body)
			}
			if r.code >= 400 {
				s := r.status(t)
				if s.Kind != "Status" || s.Status != "Failure" || string(s.Reason) != tc.reason || int(s.Code) != tc.code {
					t.Errorf("status = %+v", s)
				}
				if tc.message != "" && s.Message != tc.message {
					t.Errorf("message = %q\nwant      %q", s.Message, tc.message)
				}
				return
			}
			if tc.check != nil {
				tc.check(t, r.object(t))
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	t.Parallel()
	const item = envBase + "/namespaces/ns1/environments/a"
	body := func(name, rv, replicas, label string) string {
		md := `"name":"` + name + `"`
		if rv != "" {
			md += `,"resourceVersion":"` + rv + `"`
		}
		return `{"metadata":{` + md + `,"labels":{"l":"` + label + `"}},"spec":{"owner":"alice","tier":"dev","replicas":` + replicas + `}}`
	}
	tests := []struct {
		name    string
		mutate  func(*Config)
		body    func(rv string) string
		path    string
		code    int
		message string
		check   func(t *testing.T, old, obj map[string]any)
	}{
		{
			name: "spec_change_bumps_generation", body: func(rv string) string { return body("a", rv, "5", "x") },
			code: http.StatusOK,
			check: func(t *testing.T, old, obj map[string]any) {
				if fieldAt(obj, "metadata", "generation") != float64(2) {
					t.Errorf("generation = %v, want 2", fieldAt(obj, "metadata", "generation"))
				}
				if fieldAt(obj, "metadata", "uid") != fieldAt(old, "metadata", "uid") ||
					fieldAt(obj, "metadata", "creationTimestamp") != fieldAt(old, "metadata", "creationTimestamp") {
					t.Errorf("uid/creationTimestamp not preserved: %v vs %v", obj["metadata"], old["metadata"])
				}
				if fieldAt(obj, "metadata", "resourceVersion") == fieldAt(old, "metadata", "resourceVersion") {
					t.Errorf("resourceVersion unchanged")
				}
			},
		},
		{
			name: "metadata_change_keeps_generation", body: func(rv string) string { return body("a", rv, "1", "y") },
			code: http.StatusOK,
			check: func(t *testing.T, _, obj map[string]any) {
				if fieldAt(obj, "metadata", "generation") != float64(1) || fieldAt(obj, "metadata", "labels", "l") != "y" {
					t.Errorf("metadata = %v", obj["metadata"])
				}
			},
		},
		{
			name: "stale_resource_version", body: func(string) string { return body("a", "100", "1", "x") },
			code:    http.StatusConflict,
			message: `Operation cannot be fulfilled on environments.platform.example.com "a": the object has been modified; please apply your changes to the latest version and try again`,
		},
		{
			name: "missing_resource_version", body: func(string) string { return body("a", "", "1", "x") },
			code:    http.StatusUnprocessableEntity,
			message: `environments.platform.example.com "a" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`,
		},
		{
			name:   "unconditional_allowed",
			mutate: func(c *Config) { c.Resources[0].Strategy.AllowUnconditionalUpdate = true },
			body:   func(string) string { return body("a", "", "2", "x") },
			code:   http.StatusOK,
		},
		{
			name: "name_mismatch", body: func(rv string) string { return body("b", rv, "1", "x") },
			code: http.StatusBadRequest, message: "the name of the object (b) does not match the name on the URL (a)",
		},
		{
			name: "not_found", path: envBase + "/namespaces/ns1/environments/zz",
			body: func(rv string) string { return body("zz", rv, "1", "x") },
			code: http.StatusNotFound, message: `environments.platform.example.com "zz" not found`,
		},
		{
			name: "create_on_update", path: envBase + "/namespaces/ns1/environments/zz",
			mutate: func(c *Config) { c.Resources[0].Strategy.AllowCreateOnUpdate = true },
			body:   func(string) string { return body("zz", "", "1", "x") },
			code:   http.StatusCreated,
			check: func(t *testing.T, _, obj map[string]any) {
				if fieldAt(obj, "metadata", "uid") == nil || fieldAt(obj, "metadata", "creationTimestamp") == nil {
					t.Errorf("metadata = %v", obj["metadata"])
				}
			},
		},
		{
			name: "invalid_update", body: func(rv string) string { return body("a", rv, "-2", "x") },
			code:    http.StatusUnprocessableEntity,
			message: `Environment.platform.example.com "a" is invalid: spec.replicas: Invalid value: -2: must be greater than or equal to 0`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.mutate)
			old := e.create(t, "ns1", "a", map[string]string{"l": "x"}, "alice")
			rv, _ := fieldAt(old, "metadata", "resourceVersion").(string)
			path := tc.path
			if path == "" {
				path = item
			}
			r := e.do(t, "PUT", path, tc.body(rv))
			if r.code != tc.code {
				t.Fatalf("code = %d, want %d: %s", r.code, tc.code, r.body)
			}
			if tc.message != "" {
				if s := r.status(t); s.Message != tc.message {
					t.Errorf("message = %q\nwant      %q", s.Message, tc.message)
				}
			}
			if tc.check != nil {
				tc.check(t, old, r.object(t))
			}
		})
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	const item = envBase + "/namespaces/ns1/environments/a"
	tests := []struct {
		name    string
		path    string
		body    func(uid, rv string) string
		code    int
		message string
		gone    bool
	}{
		{name: "returns_object", code: http.StatusOK, gone: true},
		{name: "not_found", path: envBase + "/namespaces/ns1/environments/zz", code: http.StatusNotFound,
			message: `environments.platform.example.com "zz" not found`},
		{name: "uid_precondition_ok", code: http.StatusOK, gone: true,
			body: func(uid, _ string) string {
				return `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"` + uid + `"}}`
			}},
		{name: "uid_precondition_fails", code: http.StatusConflict,
			body:    func(string, string) string { return `{"preconditions":{"uid":"nope"}}` },
			message: `Operation cannot be fulfilled on Environment.platform.example.com "a": the UID in the precondition (nope) does not match the UID in record (UID). The object might have been deleted and then recreated`},
		{name: "rv_precondition_fails", code: http.StatusConflict,
			body:    func(string, string) string { return `{"preconditions":{"resourceVersion":"100"}}` },
			message: `Operation cannot be fulfilled on Environment.platform.example.com "a": the ResourceVersion in the precondition (100) does not match the ResourceVersion in record (RV). The object might have been modified`},
		{name: "dry_run", path: item + "?dryRun=All", code: http.StatusOK},
		{name: "bad_propagation_policy", code: http.StatusUnprocessableEntity,
			body:    func(string, string) string { return `{"propagationPolicy":"Sometimes"}` },
			message: `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sometimes": supported values: "Foreground", "Background", "Orphan", "nil"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			obj := e.create(t, "ns1", "a", nil, "alice")
			uid, _ := fieldAt(obj, "metadata", "uid").(string)
			rv, _ := fieldAt(obj, "metadata", "resourceVersion").(string)
			path := tc.path
			if path == "" {
				path = item
			}
			body := ""
			if tc.body != nil {
				body = tc.body(uid, rv)
			}
			r := e.do(t, "DELETE", path, body)
			if r.code != tc.code {
				t.Fatalf("code = %d, want %d: %s", r.code, tc.code, r.body)
			}
			if tc.message != "" {
				want := strings.NewReplacer("(UID)", "("+uid+")", "(RV)", "("+rv+")").Replace(tc.message)
				if s := r.status(t); s.Message != want {
					t.Errorf("message = %q\nwant      %q", s.Message, want)
				}
			}
			if r.code == http.StatusOK {
				got := r.object(t)
				if fieldAt(got, "metadata", "uid") != uid || got["kind"] != "Environment" {
					t.Errorf("deleted object = %s", r.body)
				}
			}
			after := e.do(t, "GET", item, "").code
			if tc.gone && after != http.StatusNotFound || !tc.gone && after != http.StatusOK {
				t.Errorf("GET after delete = %d, gone want %v", after, tc.gone)
			}
		})
	}
}

func TestDeleteCollection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.create(t, "ns1", "a", map[string]string{"tier": "dev"}, "alice")
	e.create(t, "ns1", "b", map[string]string{"tier": "prod"}, "bob")
	e.create(t, "ns1", "c", map[string]string{"tier": "dev"}, "carol")
	e.create(t, "ns2", "d", map[string]string{"tier": "dev"}, "dave")
	r := e.do(t, "DELETE", envBase+"/namespaces/ns1/environments?labelSelector=tier%3Ddev", "")
	if r.code != http.StatusOK {
		t.Fatalf("code = %d: %s", r.code, r.body)
	}
	list := r.object(t)
	items, _ := list["items"].([]any)
	if list["kind"] != "EnvironmentList" || len(items) != 2 {
		t.Fatalf("deleted list = %s", r.body)
	}
	for path, want := range map[string]int{"ns1/environments/a": 404, "ns1/environments/b": 200, "ns1/environments/c": 404, "ns2/environments/d": 200} {
		if got := e.do(t, "GET", envBase+"/namespaces/"+path, "").code; got != want {
			t.Errorf("GET %s = %d, want %d", path, got, want)
		}
	}
}
