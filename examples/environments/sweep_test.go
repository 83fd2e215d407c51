package main

import (
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestNoBadInputIsA500 drives the example with odd paths, query
// parameters, bodies, content types and Accept headers, over TLS with a real
// client's headers: none may answer 5xx (but kube's 504 "Too large resource
// version", which asks the client to retry), and every refusal of an API
// path is a Kubernetes Status.
func TestNoBadInputIsA500(t *testing.T) {
	t.Parallel()
	dataDir, url, _ := startExample(t)
	c := adminHTTP(t, dataDir)
	createEnvironment(t, c, url)
	base := url + "/apis/platform.example.com/v1alpha1"
	col := base + "/namespaces/default/environments"
	obj := col + "/checkout-staging"
	env := `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x1","namespace":"default"},"spec":{"owner":"o","tier":"dev","replicas":1}}`
	deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	deepArr := strings.Repeat(`[`, 20000) + strings.Repeat("]", 20000)
	long := strings.Repeat("a", 300)
	b64 := base64.RawURLEncoding.EncodeToString
	type req struct {
		m, u, ct, body string
		h              http.Header
	}
	reqs := []req{}
	add := func(m, u, ct, body string) { reqs = append(reqs, req{m, u, ct, body, nil}) }
	for _, ns := range []string{"%2e%2e", "%2e", "..", "a%2fb", "a%25b", "UPPER", long, "", "%00", "a%0ab", "a%20b", "%C3%A9", "-a", "a.b"} {
		add("GET", base+"/namespaces/"+ns+"/environments", "", "")
		add("GET", base+"/namespaces/"+ns+"/environments/x", "", "")
		add("GET", base+"/namespaces/"+ns+"/environments?watch=1&timeoutSeconds=1", "", "")
		add("GET", base+"/watch/namespaces/"+ns+"/environments?timeoutSeconds=1", "", "")
		add("POST", base+"/namespaces/"+ns+"/environments", "application/json", env)
		add("PUT", base+"/namespaces/"+ns+"/environments/x1", "application/json", env)
		add("PATCH", base+"/namespaces/"+ns+"/environments/x1", "application/merge-patch+json", `{}`)
		add("DELETE", base+"/namespaces/"+ns+"/environments/x1", "", "")
		add("DELETE", base+"/namespaces/"+ns+"/environments", "", "")
		add("GET", base+"/namespaces/"+ns+"/environments/x/status", "", "")
	}
	for _, n := range []string{"%2e%2e", "%2e", "a%2fb", "a%25b", "UPPER", long, strings.Repeat("a", 254), "%00", "a%0ab", "a%20b", "%C3%A9", "-a", "a..b", "a_b"} {
		add("GET", col+"/"+n, "", "")
		add("GET", col+"/"+n+"/status", "", "")
		add("PUT", col+"/"+n, "application/json", strings.Replace(env, `"x1"`, `"`+n+`"`, 1))
		add("PUT", col+"/"+n+"/status", "application/json", strings.Replace(env, `"x1"`, `"`+n+`"`, 1))
		add("PATCH", col+"/"+n, "application/merge-patch+json", `{}`)
		add("DELETE", col+"/"+n, "", "")
		add("GET", col+"?fieldSelector=metadata.name%3D"+n, "", "")
		add("GET", col+"?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3D"+n, "", "")
	}
	for _, q := range []string{"limit=abc", "limit=-1", "limit=99999999999999999999", "limit=1&continue=garbage", "continue=" + b64([]byte(`{"v":"meta.k8s.io/v1","rv":1,"start":"../x"}`)),
		"continue=" + b64([]byte(`{"v":"meta.k8s.io/v1","rv":-1,"start":"x"}`)), "continue=" + b64([]byte(`{"v":"meta.k8s.io/v1","rv":999999999,"start":"x"}`)), "continue=" + b64([]byte(`{"v":"meta.k8s.io/v1","rv":1,"start":"/"}`)), "continue=" + b64([]byte(`{"v":"meta.k8s.io/v1","rv":1,"start":""}`)), "continue=" + b64([]byte(`null`)), "continue=" + b64([]byte(`[]`)), "continue=" + b64([]byte(`{"v":"meta.k8s.io/v1","rv":1,"start":"\u0000"}`)),
		"resourceVersion=abc", "resourceVersion=-1", "resourceVersion=18446744073709551616", "resourceVersion=99999999999", "resourceVersion=0&resourceVersionMatch=Exact", "resourceVersion=1&resourceVersionMatch=Exact", "resourceVersion=1&resourceVersionMatch=NotOlderThan", "resourceVersionMatch=bogus", "resourceVersion=99999999&resourceVersionMatch=Exact",
		"resourceVersion=1&limit=1&continue=abc",
		"timeoutSeconds=abc", "timeoutSeconds=-1", "timeoutSeconds=99999999999999999999",
		"fieldSelector=metadata.name", "fieldSelector=spec.x%3D1", "fieldSelector=a%3D%3Db%3D%3Dc", "fieldSelector=%3D", "fieldSelector=metadata.name%3D%2e%2e", "fieldSelector=metadata.namespace%3D%2e%2e", "fieldSelector=metadata.namespace%3DUPPER",
		"labelSelector=a+in+(", "labelSelector=!!", "labelSelector=%3D%3D", "labelSelector=a%3D" + long, "labelSelector=" + strings.Repeat("a,", 5000) + "a",
		"watch=1&timeoutSeconds=1&resourceVersion=abc", "watch=1&timeoutSeconds=1&resourceVersion=1", "watch=1&timeoutSeconds=1&resourceVersion=99999999", "watch=1&sendInitialEvents=true&timeoutSeconds=1", "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1", "watch=1&sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=1&timeoutSeconds=1", "watch=1&allowWatchBookmarks=x&timeoutSeconds=1",
		"sendInitialEvents=true", "includeObject=bogus", "pretty=x",
		"watch=1&timeoutSeconds=1&continue=abc", "watch=1&timeoutSeconds=1&limit=5",
	} {
		add("GET", col+"?"+q, "", "")
		add("GET", obj+"?"+q, "", "")
		add("DELETE", col+"?dryRun=All&"+q, "", "")
	}
	for _, q := range []string{"dryRun=bogus", "dryRun=All", "dryRun=All&dryRun=bogus", "fieldValidation=bogus", "fieldValidation=Strict", "fieldManager=" + long, "fieldManager=%00", "propagationPolicy=bogus", "gracePeriodSeconds=abc", "gracePeriodSeconds=-1", "gracePeriodSeconds=99999999999999999999", "orphanDependents=x", "force=true"} {
		add("POST", col+"?"+q, "application/json", strings.Replace(env, `"x1"`, `"q`+string(rune('a'+len(reqs)%26))+`"`, 1))
		add("PUT", obj+"?"+q, "application/json", strings.Replace(env, `"x1"`, `"checkout-staging"`, 1))
		add("PATCH", obj+"?"+q, "application/merge-patch+json", `{}`)
		add("DELETE", col+"/nonexistent?"+q, "", "")
		add("DELETE", col+"?"+q+"&labelSelector=nomatch%3D1", "", "")
	}
	bodies := []string{"", "null", "[]", "1", `"s"`, "{", "{}", `{"kind":"Other"}`, `{"apiVersion":"v1","kind":"Environment","metadata":{"name":"x2"}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Pod","metadata":{"name":"x2"}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":"x"}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":5}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2","labels":[]}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2","resourceVersion":5}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2","resourceVersion":"abc"}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2","namespace":"other"}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2","namespace":".."}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":".."}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"a/b"}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"generateName":"../"}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"generateName":"` + long + `"}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2","creationTimestamp":"garbage","deletionTimestamp":"2020-01-01T00:00:00Z","uid":5}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2"},"spec":"x"}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2"},"spec":{"owner":"o","replicas":1e400}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2"},"spec":{"owner":"o","replicas":123456789012345678901234567890}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2"},"spec":{"owner":"o","replicas":1.5}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2"},"spec":{"owner":"o","replicas":-0}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2"},"spec":{"owner":"o","x":` + deep + `}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2"},"spec":{"owner":"o","x":` + deepArr + `}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2"},"spec":{"owner":"` + "\xff\xfe" + `"}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2","name":"x3"},"spec":{"owner":"o"}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","kind":"Other","metadata":{"name":"x2"},"spec":{"owner":"o"}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2"},"spec":{"owner":"o"}}  trailing`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2"},"spec":{"owner":"o"}}{}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2","ownerReferences":[{"apiVersion":"","kind":"","name":"","uid":""}],"finalizers":["a/b/c"],"managedFields":[{"manager":5}]},"spec":{"owner":"o"}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2","labels":{"a":5}},"spec":{"owner":"o"}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2","annotations":{"a":"` + strings.Repeat("x", 300000) + `"}},"spec":{"owner":"o"}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x2"},"spec":{"owner":"o"},"status":{"phase":5}}`,
		"\x00\x01", "\xef\xbb\xbf{}",
	}
	for i, b := range bodies {
		for _, ct := range []string{"application/json", "application/yaml", "application/json; charset=utf-8", "text/plain", "application/vnd.kubernetes.protobuf", "", "application/json; charset=latin1", "bogus/;;"} {
			add("POST", col, ct, b)
			_ = i
		}
		add("PUT", obj, "application/json", strings.Replace(b, `"x2"`, `"checkout-staging"`, 1))
		add("PUT", obj+"/status", "application/json", strings.Replace(b, `"x2"`, `"checkout-staging"`, 1))
		add("DELETE", col+"/nonexistent", "application/json", b)
		add("DELETE", obj+"?dryRun=All", "application/json", b)
		add("DELETE", col+"?dryRun=All&labelSelector=x%3D1", "application/json", b)
	}
	for _, p := range []string{"null", "[]", "1", `"s"`, "{", `{"metadata":null}`, `{"metadata":{"name":"other"}}`, `{"metadata":{"namespace":"other"}}`, `{"metadata":{"uid":"x"}}`, `{"metadata":{"resourceVersion":"1"}}`, `{"metadata":{"resourceVersion":"abc"}}`, `{"metadata":{"resourceVersion":5}}`, `{"metadata":"x"}`, `{"kind":null}`, `{"apiVersion":"v1"}`, `{"spec":null}`, `{"spec":{"replicas":1e400}}`, `{"spec":{"x":` + deep + `}}`, `{"metadata":{"labels":{"a":null}}}`, `{"metadata":{"creationTimestamp":"x"}}`, `{"metadata":{"deletionTimestamp":"2020-01-01T00:00:00Z"}}`, `{"status":"x"}`} {
		add("PATCH", obj, "application/merge-patch+json", p)
		add("PATCH", obj+"/status", "application/merge-patch+json", p)
	}
	for _, p := range []string{"null", "{}", "[{}]", `[{"op":"bogus","path":"/x"}]`, `[{"op":"add","path":"x","value":1}]`, `[{"op":"add","path":"/metadata/name","value":"other"}]`, `[{"op":"replace","path":"","value":[]}]`, `[{"op":"replace","path":"","value":null}]`, `[{"op":"replace","path":"","value":1}]`, `[{"op":"remove","path":"/metadata"}]`, `[{"op":"remove","path":"/kind"}]`, `[{"op":"remove","path":"/apiVersion"}]`, `[{"op":"add","path":"/metadata/resourceVersion","value":5}]`, `[{"op":"move","from":"/spec","path":"/spec/x"}]`, `[{"op":"add","path":"/spec/-1","value":1}]`, `[{"op":"test","path":"/spec/owner","value":"no"}]`, `[{"op":"add","path":"/metadata/namespace","value":".."}]`, `[{"op":"replace","path":"/metadata/uid","value":"x"}]`, `[{"op":"add","path":"/spec/a~2","value":1}]`, `[{"op":"copy","from":"/x","path":"/y"}]`} {
		add("PATCH", obj, "application/json-patch+json", p)
		add("PATCH", obj+"/status", "application/json-patch+json", p)
	}
	for _, ct := range []string{"application/strategic-merge-patch+json", "application/apply-patch+yaml", "", "text/plain", "bogus"} {
		add("PATCH", obj, ct, "{}")
	}
	for _, accept := range []string{"application/yaml", "application/vnd.kubernetes.protobuf", "application/json;as=Table;g=meta.k8s.io;v=v2", "application/json;as=Table;g=meta.k8s.io;v=v1", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "*/*;q=abc", "bogus", ";;;", "application/json;stream=watch", "text/html"} {
		for _, u := range []string{col, obj, col + "?watch=1&timeoutSeconds=1", base, url + "/apis", url + "/openapi/v2", url + "/openapi/v3", url + "/openapi/v3/apis/platform.example.com/v1alpha1", col + "?includeObject=Object"} {
			reqs = append(reqs, req{"GET", u, "", "", http.Header{"Accept": {accept}}})
		}
		reqs = append(reqs, req{"POST", col, "application/json", strings.Replace(env, `"x1"`, `"acc`+string(rune('a'+len(reqs)%26))+`"`, 1), http.Header{"Accept": {accept}}})
	}
	for _, u := range []string{"/apis/platform.example.com/v1alpha1/environments", "/apis/platform.example.com/v1alpha1/namespaces", "/apis/platform.example.com/v1alpha1/namespaces/default", "/apis/platform.example.com/v1alpha1/namespaces/default/environments/x/y/z", "/apis/platform.example.com/v1alpha1/watch", "/apis/platform.example.com/v1alpha1/watch/namespaces", "/apis/platform.example.com/v1alpha1/proxy/x", "/apis/platform.example.com/v1alpha1/namespaces/default/environments/x/status/y", "/apis/platform.example.com/v1alpha1/namespaces/default/status", "/apis/platform.example.com/v1alpha1/namespaces/default/finalize", "/apis/platform.example.com", "/apis/platform.example.com/", "/apis//v1alpha1/environments", "/api", "/api/v1", "/api/v1/namespaces", "/apis/platform.example.com/v1alpha1/namespaces/default//", "//apis", "/apis/platform.example.com/v1alpha1/%2e%2e/%2e%2e/healthz", "/openapi/v3/apis/x/y", "/openapi/v3/%2e%2e", "/readyz/%2e%2e", "/healthz/bogus", "/livez?verbose&exclude=x", "/metrics", "/version", "/apis/platform.example.com/v1alpha1/namespaces/default/environments/x/status?watch=1", "/apis/platform.example.com/v1alpha1/watch/namespaces/default/environments/checkout-staging?timeoutSeconds=1", "/apis/platform.example.com/v1alpha1/watch/namespaces/default/environments/checkout-staging/status?timeoutSeconds=1"} {
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "CONNECT", "TRACE", "BOGUS"} {
			add(m, url+u, "application/json", "{}")
		}
	}
	for _, q := range []string{"fieldSelector=spec.tier%3Ddev", "fieldSelector=spec.tier%3D%3D", "fieldSelector=spec.tier!%3Dx,metadata.name%3Dy", "fieldSelector=status.phase%3D" + long, "limit=0", "limit=1", "fieldSelector=metadata.name!%3Dx"} {
		add("GET", col+"?"+q, "", "")
		reqs = append(reqs, req{"GET", col + "?" + q, "", "", http.Header{"Accept": {"application/json;as=Table;g=meta.k8s.io;v=v1"}}})
		reqs = append(reqs, req{"GET", col + "?watch=1&timeoutSeconds=1&" + q, "", "", http.Header{"Accept": {"application/json;as=Table;g=meta.k8s.io;v=v1"}}})
	}
	reqs = append(reqs, req{"POST", col, "application/json", "garbage", http.Header{"Content-Encoding": {"gzip"}}})
	reqs = append(reqs, req{"POST", col, "application/json", env, http.Header{"Content-Encoding": {"br"}}})
	reqs = append(reqs, req{"POST", col, "application/json", env, http.Header{"Expect": {"100-continue"}}})
	reqs = append(reqs, req{"GET", col, "", "", http.Header{"Accept": {"application/json;as=Table;g=meta.k8s.io;v=v1"}, "Impersonate-User": {"bob"}, "Impersonate-Group": {"system:masters"}}})
	reqs = append(reqs, req{"GET", col, "", "", http.Header{"Impersonate-User": {""}}})
	reqs = append(reqs, req{"GET", col, "", "", http.Header{"Impersonate-Extra-%zz": {"x"}, "Impersonate-User": {"bob"}}})
	type result struct {
		r    req
		code int
		body string
	}
	results := make(chan result)
	work := make(chan req)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				code, body, err := send(c, r.m, r.u, r.ct, []byte(r.body), r.h)
				if err != nil {
					code, body = -1, err.Error()
				}
				results <- result{r, code, body}
			}
		}()
	}
	go func() {
		for _, r := range reqs {
			work <- r
		}
		close(work)
		wg.Wait()
		close(results)
	}()
	n, n5 := 0, 0
	for res := range results {
		n++
		r, code, body := res.r, res.code, res.body
		health := strings.HasPrefix(strings.TrimPrefix(r.u, url), "/readyz") || strings.HasPrefix(strings.TrimPrefix(r.u, url), "/healthz") || strings.HasPrefix(strings.TrimPrefix(r.u, url), "/livez")
		if code < 0 {
			t.Errorf("%s %.200s: %s", r.m, strings.TrimPrefix(r.u, url), body)
			continue
		}
		// A client that accepts YAML gets its Status in YAML, as from kube-apiserver.
		yamlStatus := r.h.Get("Accept") == "application/yaml" && strings.HasPrefix(body, "kind: Status\n")
		if code >= 400 && r.m != "HEAD" && !health && !strings.HasPrefix(body, `{"kind":"Status"`) && !yamlStatus {
			t.Errorf("not a Status: %s %.200s -> %d %.200s", r.m, strings.TrimPrefix(r.u, url), code, body)
		}
		if code >= 500 && !strings.Contains(body, `"reason":"Timeout"`) && !strings.Contains(body, "Too large resource version") {
			n5++
			t.Errorf("%s %.200s ct=%q h=%v body=%.80q -> %d %.300s", r.m, strings.TrimPrefix(r.u, url), r.ct, r.h, r.body, code, body)
		}
	}
	if n != len(reqs) {
		t.Fatalf("%d of %d requests answered", n, len(reqs))
	}
	t.Logf("%d requests, %d 5xx", n, n5)
}
