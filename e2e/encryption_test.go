package e2e

// Encryption at rest (issue 19): values annex writes under each of kube's
// local providers decrypt with k8s.io/apiserver's own transformers, built
// by its encryptionconfig loader from the same EncryptionConfiguration
// file, and values those transformers write decrypt in annex.

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	kubevalue "k8s.io/apiserver/pkg/storage/value"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/value"
)

func TestEncryptionMatchesKubeTransformers(t *testing.T) {
	key := func(n int, b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, n)) }
	doc := `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [environments.gcm.example.com]
    providers: [{aesgcm: {keys: [{name: g1, secret: ` + key(32, 1) + `}, {name: g0, secret: ` + key(16, 2) + `}]}}]
  - resources: [environments.cbc.example.com]
    providers: [{aescbc: {keys: [{name: c1, secret: ` + key(32, 3) + `}]}}]
  - resources: [environments.box.example.com]
    providers: [{secretbox: {keys: [{name: s1, secret: ` + key(32, 4) + `}]}}]
  - resources: [environments.plain.example.com]
    providers: [{identity: {}}, {aescbc: {keys: [{name: p1, secret: ` + key(24, 5) + `}]}}]
`
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kube, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	ours, err := value.LoadEncryptionConfigurationFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for group, prefix := range map[string]string{
		"gcm.example.com": "k8s:enc:aesgcm:v1:g1:", "cbc.example.com": "k8s:enc:aescbc:v1:c1:",
		"box.example.com": "k8s:enc:secretbox:v1:s1:", "plain.example.com": "",
	} {
		t.Run(group, func(t *testing.T) {
			kt := kube.Transformers[schema.GroupResource{Group: group, Resource: "environments"}]
			if kt == nil {
				t.Fatalf("kube has no transformer for %s", group)
			}
			k := storage.ObjectKey(group, "environments", "default", "e1")
			dataCtx := kubevalue.DefaultContext(k)
			plain := []byte(`{"apiVersion":"` + group + `/v1","kind":"Environment","spec":{"owner":"payments-team"}}`)

			mine, err := ours.TransformToStorage(ctx, plain, k)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(mine, []byte(prefix)) {
				t.Fatalf("annex wrote %q, want prefix %q", mine[:min(len(mine), 40)], prefix)
			}
			got, stale, err := kt.TransformFromStorage(ctx, mine, dataCtx)
			if err != nil || stale || !bytes.Equal(got, plain) {
				t.Fatalf("kube read annex's value: %q stale=%v err=%v", got, stale, err)
			}

			theirs, err := kt.TransformToStorage(ctx, plain, dataCtx)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(theirs, []byte(prefix)) {
				t.Fatalf("kube wrote %q, want prefix %q", theirs[:min(len(theirs), 40)], prefix)
			}
			got, stale, err = ours.TransformFromStorage(ctx, theirs, k)
			if err != nil || stale || !bytes.Equal(got, plain) {
				t.Fatalf("annex read kube's value: %q stale=%v err=%v", got, stale, err)
			}
			// Authenticated providers bind the value to its key: moved, it
			// does not read, in either server.
			if group == "gcm.example.com" {
				other := storage.ObjectKey(group, "environments", "default", "e2")
				if _, _, err := ours.TransformFromStorage(ctx, theirs, other); err == nil {
					t.Error("annex read a value moved to another key")
				}
				if _, _, err := kt.TransformFromStorage(ctx, mine, kubevalue.DefaultContext(other)); err == nil {
					t.Error("kube read a value moved to another key")
				}
			}
		})
	}
	// The second aesgcm key reads in both (rotation), and is stale in both.
	g0 := `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [environments.gcm.example.com]
    providers: [{aesgcm: {keys: [{name: g0, secret: ` + key(16, 2) + `}]}}]
`
	old := filepath.Join(t.TempDir(), "old.yaml")
	if err := os.WriteFile(old, []byte(g0), 0o600); err != nil {
		t.Fatal(err)
	}
	oldKube, err := encryptionconfig.LoadEncryptionConfig(ctx, old, false, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	k := storage.ObjectKey("gcm.example.com", "environments", "default", "old")
	v, err := oldKube.Transformers[schema.GroupResource{Group: "gcm.example.com", Resource: "environments"}].TransformToStorage(ctx, []byte("{}"), kubevalue.DefaultContext(k))
	if err != nil {
		t.Fatal(err)
	}
	if got, stale, err := ours.TransformFromStorage(ctx, v, k); err != nil || !stale || string(got) != "{}" {
		t.Fatalf("annex read kube's value of the second key: %q stale=%v err=%v", got, stale, err)
	}
}
