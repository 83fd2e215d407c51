package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/annexapi/annex/internal/kubectltest"
)

// TestEncryptionAtRest runs the example with --encryption-provider-config:
// kubectl reads and writes plaintext, the bbolt file holds only secretbox
// ciphertext with kube's prefix (checked by reading the file itself); a
// restart with the key rotated (a new aesgcm key first, the old one after)
// still reads every object, and an update rewrites it under the new key.
func TestEncryptionAtRest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "encryption.yaml")
	secretbox := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	aesgcm := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	write := func(providers string) {
		t.Helper()
		doc := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n" +
			"  - resources: [environments.platform.example.com]\n    providers:\n" + providers
		if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("      - secretbox: {keys: [{name: first, secret: " + secretbox + "}]}\n      - identity: {}\n")

	dataDir, _, stop := startExample(t, "--encryption-provider-config", cfg)
	k := kubectltest.New(t, filepath.Join(dataDir, "kubeconfig"))
	k.MustRun("apply", "-f", k.WriteFile("env.yaml", "apiVersion: platform.example.com/v1alpha1\nkind: Environment\n"+
		"metadata: {name: vault, namespace: default}\nspec: {owner: payments-team-secret, tier: dev}\n"))
	if got := k.MustRun("get", "environment", "vault", "-o", "jsonpath={.spec.owners[0]}"); got != "payments-team-secret" {
		t.Fatalf("read back %q", got)
	}
	stop()
	values := storedValues(t, filepath.Join(dataDir, "storage.db"))
	if !containsPrefix(values, "k8s:enc:secretbox:v1:first:") || containsText(values, "payments-team-secret") {
		t.Fatalf("the bbolt file holds plaintext or no secretbox value (%d values)", len(values))
	}

	// Rotate: a new first key, the old one still listed to read.
	write("      - aesgcm: {keys: [{name: second, secret: " + aesgcm + "}]}\n      - secretbox: {keys: [{name: first, secret: " + secretbox + "}]}\n")
	_, _, stop = startExampleIn(t, dataDir, "--encryption-provider-config", cfg)
	k.MustRun("label", "environment", "vault", "rotated=yes")
	if got := k.MustRun("get", "environment", "vault", "-o", "jsonpath={.spec.owners[0]}"); got != "payments-team-secret" {
		t.Fatalf("after rotation: %q", got)
	}
	stop()
	values = storedValues(t, filepath.Join(dataDir, "storage.db"))
	if !containsPrefix(values, "k8s:enc:aesgcm:v1:second:") || containsText(values, "payments-team-secret") {
		t.Fatal("the update after rotation did not store under the new key")
	}
}

// storedValues reads every value of every bucket of a bbolt file.
func storedValues(t *testing.T, path string) [][]byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out [][]byte
	var walk func(b *bolt.Bucket)
	walk = func(b *bolt.Bucket) {
		_ = b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(b.Bucket(k))
				return nil
			}
			out = append(out, bytes.Clone(v))
			return nil
		})
	}
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { walk(b); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func containsPrefix(values [][]byte, prefix string) bool {
	for _, v := range values {
		if bytes.HasPrefix(v, []byte(prefix)) || bytes.Contains(v, []byte(prefix)) {
			return true
		}
	}
	return false
}

func containsText(values [][]byte, s string) bool {
	for _, v := range values {
		if strings.Contains(string(v), s) {
			return true
		}
	}
	return false
}
