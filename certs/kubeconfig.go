// This file holds WriteKubeconfig, which writes the kubeconfig kubectl uses to
// reach a standalone server with the local admin client certificate.

package certs

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Kubeconfig is what WriteKubeconfig writes: one cluster, one user, one
// context, made current.
type Kubeconfig struct {
	// Server is the server URL, e.g. https://127.0.0.1:8443. Required.
	Server string
	// CAPEM is the CA bundle that verifies the serving certificate. Required.
	CAPEM []byte
	// ClientCertPEM and ClientKeyPEM are the user's client certificate and
	// key. Required.
	ClientCertPEM []byte
	ClientKeyPEM  []byte
	// ClusterName names the cluster entry. Zero means "annex".
	ClusterName string
	// UserName names the user entry. Zero means "annex-admin".
	UserName string
	// ContextName names the context, which is made current. Zero means
	// ClusterName.
	ContextName string
	// Namespace is the context's default namespace. Zero means none.
	Namespace string
}

// WriteKubeconfig writes kc to path (mode 0600, atomically), creating the
// directory if needed. Credentials are embedded (the *-data fields), so the
// file stands alone.
func WriteKubeconfig(path string, kc Kubeconfig) error {
	if kc.Server == "" || len(kc.CAPEM) == 0 || len(kc.ClientCertPEM) == 0 || len(kc.ClientKeyPEM) == 0 {
		return ErrInvalidKubeconfig
	}
	if kc.ClusterName == "" {
		kc.ClusterName = "annex"
	}
	if kc.UserName == "" {
		kc.UserName = "annex-admin"
	}
	if kc.ContextName == "" {
		kc.ContextName = kc.ClusterName
	}
	b64 := base64.StdEncoding.EncodeToString
	var sb strings.Builder
	// A JSON string is a valid YAML double-quoted scalar, so every name is
	// written with json quoting and cannot break the document.
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("apiVersion: v1\nkind: Config\n")
	w("clusters:\n- name: %s\n  cluster:\n    server: %s\n    certificate-authority-data: %s\n",
		q(kc.ClusterName), q(kc.Server), b64(kc.CAPEM))
	w("users:\n- name: %s\n  user:\n    client-certificate-data: %s\n    client-key-data: %s\n",
		q(kc.UserName), b64(kc.ClientCertPEM), b64(kc.ClientKeyPEM))
	w("contexts:\n- name: %s\n  context:\n    cluster: %s\n    user: %s\n",
		q(kc.ContextName), q(kc.ClusterName), q(kc.UserName))
	if kc.Namespace != "" {
		w("    namespace: %s\n", q(kc.Namespace))
	}
	w("current-context: %s\npreferences: {}\n", q(kc.ContextName))
	if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return WriteFileAtomic(path, []byte(sb.String()), keyMode)
}

func q(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
