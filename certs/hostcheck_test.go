package certs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHostCheck(t *testing.T) {
	t.Parallel()
	ca, err := NewCA(CAConfig{Name: "test-ca"})
	if err != nil {
		t.Fatal(err)
	}
	issue := func(dns ...string) string {
		kp, err := ca.Issue(Request{CommonName: "metrics-server.kube-system.svc", DNSNames: dns})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "serving.crt")
		if err := os.WriteFile(p, append(kp.CertPEM, ca.CertPEM...), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const host = "metrics-server.kube-system.svc"
	cases := []struct {
		name    string
		file    string
		wantErr error
		wantMsg string
	}{
		{name: "has_service_name", file: issue("localhost", host)},
		{name: "wildcard_covers_service_name", file: issue("*.kube-system.svc"), wantErr: nil},
		{name: "only_localhost", file: issue("localhost"), wantErr: ErrHostMismatch, wantMsg: "not valid for " + host},
		{name: "common_name_is_not_enough", file: issue("other.example"), wantErr: ErrHostMismatch, wantMsg: "[other.example]"},
		{name: "missing_file", file: filepath.Join(t.TempDir(), "absent.crt"), wantErr: os.ErrNotExist},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := HostCheck{CertFile: c.file, Host: host}.Ready(context.Background())
			if c.wantErr == nil {
				if err != nil {
					t.Fatalf("Ready: %v", err)
				}
				return
			}
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("Ready = %v, want %v", err, c.wantErr)
			}
			if !strings.Contains(err.Error(), c.wantMsg) {
				t.Errorf("message %q lacks %q", err, c.wantMsg)
			}
		})
	}
}
