package kubeflags

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/annexapi/annex/annextest"
	"github.com/annexapi/annex/rest"
	"go.uber.org/zap"
)

const auditTestPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/readyz*", "/healthz*", "/livez*"]
- level: Metadata
`

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAuditFlags: --audit-policy-file and --audit-log-path turn audit on;
// bad values fail Apply naming the flag, or Build (a log path it cannot
// make) naming the Audit field, without creating anything.
func TestAuditFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	policy := writeFile(t, dir, "policy.yaml", auditTestPolicy)
	badPolicy := writeFile(t, dir, "bad.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n")
	aFile := writeFile(t, dir, "a-file", "")
	tests := []struct {
		name string
		args []string
		want []string // errors; nil means Build succeeds and audits
	}{
		{"policy_and_log", []string{"--audit-policy-file=" + policy, "--audit-log-path=" + filepath.Join(dir, "ok", "audit.log")}, nil},
		{"bad_policy", []string{"--audit-policy-file=" + badPolicy, "--audit-log-path=-"}, []string{"--audit-policy-file " + badPolicy, "Loud"}},
		{"missing_policy", []string{"--audit-policy-file=" + filepath.Join(dir, "nope.yaml"), "--audit-log-path=-"}, []string{"--audit-policy-file"}},
		{"bad_mode", []string{"--audit-policy-file=" + policy, "--audit-log-path=-", "--audit-log-mode=later"}, []string{"--audit-* flags", "invalid audit log mode later"}},
		{"log_under_a_file", []string{"--audit-policy-file=" + policy, "--audit-log-path=" + filepath.Join(aFile, "audit.log")}, []string{"Audit", "is not a directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, fs, o := serverFlags(t)
			b.Resources = []rest.Resource{widgets()}
			b.DataDir = filepath.Join(t.TempDir(), "data")
			b.Observability.Logger = zap.NewNop()
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := o.Apply(b)
			if err == nil {
				var srv *annextest.Server
				srv, err = annextest.NewServer(*b)
				if err == nil {
					defer srv.Close()
				}
			}
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Apply and Build: %v", err)
				}
				if _, err := os.Stat(filepath.Join(dir, "ok", "audit.log")); err != nil {
					t.Errorf("the log file was not created: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Apply and Build succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if _, statErr := os.Stat(b.DataDir); statErr == nil {
				t.Error("a failed Apply or Build made DataDir")
			}
		})
	}
}
