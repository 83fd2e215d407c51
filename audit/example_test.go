package audit_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/annexapi/annex/audit"
	"github.com/annexapi/annex/filters"
)

// The environments example's policy loads and means what its comments say.
func TestExamplePolicy(t *testing.T) {
	t.Parallel()
	_, file, _, _ := runtime.Caller(0)
	p, err := audit.LoadPolicyFile(filepath.Join(filepath.Dir(file), "..", "examples", "environments", "audit-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := audit.NewEvaluator(p)
	if err != nil {
		t.Fatal(err)
	}
	env := func(verb, sub string) *filters.RequestInfo {
		return &filters.RequestInfo{IsResourceRequest: true, Verb: verb, APIGroup: "platform.example.com", APIVersion: "v1alpha1", Resource: "environments", Subresource: sub, Namespace: "dev", Name: "e"}
	}
	u := &filters.User{Name: "alice"}
	for _, c := range []struct {
		info *filters.RequestInfo
		want audit.Level
	}{
		{&filters.RequestInfo{Verb: "get", Path: "/readyz"}, audit.LevelNone},
		{&filters.RequestInfo{Verb: "get", Path: "/apis/platform.example.com/v1alpha1"}, audit.LevelNone},
		{env("create", ""), audit.LevelRequestResponse},
		{env("update", "status"), audit.LevelRequestResponse},
		{env("get", ""), audit.LevelMetadata},
		{env("watch", ""), audit.LevelMetadata},
		{&filters.RequestInfo{Verb: "get", Path: "/debug/pprof/"}, audit.LevelMetadata},
	} {
		cfg := ev.Evaluate(u, c.info)
		if cfg.Level != c.want || !cfg.Omits(audit.StageRequestReceived) || !cfg.OmitManagedFields {
			t.Errorf("%s %s%s: %+v, want %s", c.info.Verb, c.info.Path, c.info.Resource, cfg, c.want)
		}
	}
}

func ExampleAddFlags() {
	dir, _ := os.MkdirTemp("", "audit")
	defer os.RemoveAll(dir)
	policy := filepath.Join(dir, "policy.yaml")
	_ = os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600)

	fs := newFlagSet()
	f := audit.AddFlags(fs)
	_ = fs.Parse([]string{"--audit-policy-file=" + policy, "--audit-log-path=" + filepath.Join(dir, "audit.log"), "--audit-log-maxbackup=10"})
	cfg, err := f.Config()
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := audit.New(cfg) // then: handler = a.Filter(handler); go a.Start(ctx)
	fmt.Println(a.Enabled(), err, cfg.Log.Batch.Mode, cfg.Log.MaxBackups)
	// Output: true <nil> blocking 10
}
