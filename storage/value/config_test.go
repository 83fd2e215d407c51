package value

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
)

func b64(n int, fill byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{fill}, n))
}

func mustConfig(t *testing.T, y string) Transformer {
	t.Helper()
	c, err := ParseEncryptionConfiguration([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := c.Transformer()
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestEncryptionConfigurationProviders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := storage.ObjectKey("platform.example.com", "environments", "ns", "a")
	for _, tc := range []struct{ provider, prefix string }{
		{"aesgcm: {keys: [{name: k1, secret: " + b64(32, 1) + "}]}", "k8s:enc:aesgcm:v1:k1:"},
		{"aescbc: {keys: [{name: k1, secret: " + b64(32, 2) + "}]}", "k8s:enc:aescbc:v1:k1:"},
		{"aescbc: {keys: [{name: short, secret: " + b64(16, 3) + "}]}", "k8s:enc:aescbc:v1:short:"},
		{"secretbox: {keys: [{name: k1, secret: " + b64(32, 4) + "}]}", "k8s:enc:secretbox:v1:k1:"},
		{"identity: {}", ""},
	} {
		t.Run(strings.SplitN(tc.provider, ":", 2)[0], func(t *testing.T) {
			tr := mustConfig(t, `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [environments.platform.example.com]
    providers:
      - `+tc.provider+"\n")
			for _, plain := range [][]byte{[]byte(`{"spec":{"owner":"payments-team"}}`), {}, bytes.Repeat([]byte("x"), 16)} {
				stored, err := tr.TransformToStorage(ctx, plain, key)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(stored, []byte(tc.prefix)) || (tc.prefix != "" && len(plain) > 0 && bytes.Contains(stored, plain)) {
					t.Fatalf("stored form %q", stored)
				}
				out, stale, err := tr.TransformFromStorage(ctx, stored, key)
				if err != nil || stale || !bytes.Equal(out, plain) {
					t.Fatalf("read back %q stale=%v err=%v", out, stale, err)
				}
				if tc.prefix != "" {
					// Tampered values do not read. CBC has no authentication:
					// a changed byte is caught only by chance (the padding),
					// a cut value always.
					bad := bytes.Clone(stored)
					if strings.Contains(tc.prefix, "aescbc") {
						bad = bad[:len(bad)-1]
					} else {
						bad[len(bad)-1] ^= 0xff
					}
					if _, _, err := tr.TransformFromStorage(ctx, bad, key); !errors.Is(err, ErrDecrypt) {
						t.Fatalf("tampered value: err = %v", err)
					}
				}
			}
			// Other resources are not encrypted.
			other := storage.ObjectKey("platform.example.com", "widgets", "ns", "a")
			if stored, _ := tr.TransformToStorage(ctx, []byte("{}"), other); string(stored) != "{}" {
				t.Fatalf("another resource stored as %q", stored)
			}
		})
	}
}

func TestEncryptionConfigurationRoutingAndRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := mustConfig(t, `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [environments.platform.example.com]
    providers:
      - secretbox: {keys: [{name: new, secret: `+b64(32, 9)+`}]}
      - aescbc: {keys: [{name: old, secret: `+b64(32, 8)+`}]}
      - identity: {}
  - resources: ["*.platform.example.com"]
    providers:
      - aesgcm: {keys: [{name: group, secret: `+b64(16, 7)+`}]}
  - resources: ["*.*"]
    providers:
      - identity: {}
      - aesgcm: {keys: [{name: all, secret: `+b64(32, 6)+`}]}
  - resources: [environments.platform.example.com]
    providers:
      - aescbc: {keys: [{name: ignored, secret: `+b64(32, 5)+`}]}
`)
	env := storage.ObjectKey("platform.example.com", "environments", "ns", "a")
	widget := storage.ObjectKey("platform.example.com", "widgets", "", "w")
	cm := storage.ObjectKey("", "configmaps", "ns", "c")
	for key, prefix := range map[string]string{env: "k8s:enc:secretbox:v1:new:", widget: "k8s:enc:aesgcm:v1:group:", cm: "{"} {
		stored, err := tr.TransformToStorage(ctx, []byte("{}"), key)
		if err != nil || !bytes.HasPrefix(stored, []byte(prefix)) {
			t.Errorf("%s stored as %q (%v), want prefix %q", key, stored, err, prefix)
		}
	}
	// Values of the older key and plaintext read, stale.
	old := mustConfig(t, `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [environments.platform.example.com]
    providers: [{aescbc: {keys: [{name: old, secret: `+b64(32, 8)+`}]}}]
`)
	stored, _ := old.TransformToStorage(ctx, []byte(`{"a":1}`), env)
	for _, v := range [][]byte{stored, []byte(`{"a":1}`)} {
		out, stale, err := tr.TransformFromStorage(ctx, v, env)
		if err != nil || !stale || string(out) != `{"a":1}` {
			t.Errorf("rotation read of %q: %q stale=%v err=%v", v, out, stale, err)
		}
	}
	// Identity first (decrypting on the way out of encryption) still reads
	// encrypted values with the providers after it.
	all, _ := mustConfig(t, `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ["*.*"]
    providers: [{aesgcm: {keys: [{name: all, secret: `+b64(32, 6)+`}]}}]
`).TransformToStorage(ctx, []byte(`{"b":2}`), cm)
	if out, stale, err := tr.TransformFromStorage(ctx, all, cm); err != nil || !stale || string(out) != `{"b":2}` {
		t.Errorf("identity-first read of an encrypted value: %q stale=%v err=%v", out, stale, err)
	}
	// A value of a key no longer listed does not read.
	if _, _, err := tr.TransformFromStorage(ctx, []byte("k8s:enc:aesgcm:v1:gone:xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"), widget); !errors.Is(err, ErrNoMatchingPrefix) {
		t.Errorf("unknown key: err = %v", err)
	}
}

func TestEncryptionConfigurationRefusals(t *testing.T) {
	t.Parallel()
	head := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"kind", "apiVersion: v1\nkind: ConfigMap\n", `got unexpected config type`},
		{"unknown_field", head + "resourcez: []\n", `unknown field "resourcez"`},
		{"no_resources", head + "resources: []\n", "resources: Required value: at least one resources is required"},
		{"no_providers", head + "resources: [{resources: [a.b], providers: []}]\n", "resources[0].providers: Required value: at least one resources[0].providers is required"},
		{"short_key", head + "resources: [{resources: [a.b], providers: [{aescbc: {keys: [{name: k, secret: " + b64(8, 1) + "}]}}]}]\n",
			`resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 8, expected one of [16 24 32]`},
		{"secretbox_16", head + "resources: [{resources: [a.b], providers: [{secretbox: {keys: [{name: k, secret: " + b64(16, 1) + "}]}}]}]\n",
			`resources[0].providers[0].secretbox.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 16, expected one of [32]`},
		{"not_base64", head + "resources: [{resources: [a.b], providers: [{aesgcm: {keys: [{name: k, secret: '!!'}]}}]}]\n",
			`resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": secrets must be base64 encoded`},
		{"no_name", head + "resources: [{resources: [a.b], providers: [{aesgcm: {keys: [{secret: " + b64(16, 1) + "}]}}]}]\n",
			"resources[0].providers[0].aesgcm.keys[0].name: Required value: name is a mandatory field for a key"},
		{"two_in_one", head + "resources: [{resources: [a.b], providers: [{identity: {}, aesgcm: {keys: [{name: k, secret: " + b64(16, 1) + "}]}}]}]\n",
			"more than one provider specified in a single element, should split into different list elements"},
		{"kms", head + "resources: [{resources: [a.b], providers: [{kms: {name: p, endpoint: 'unix:///tmp/kms.sock'}}]}]\n",
			"resources[0].providers[0].kms: Invalid value: \"{...}\": KMS providers are not supported by this server"},
		{"star", head + "resources: [{resources: ['*'], providers: [{identity: {}}]}]\n", "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"},
		{"overlap", head + "resources: [{resources: [secrets, '*.'], providers: [{identity: {}}]}]\n", "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"},
		{"capital", head + "resources: [{resources: [Environments.platform.example.com], providers: [{identity: {}}]}]\n", "resource name should not contain capital letters"},
		{"across_groups", head + "resources: [{resources: [environments.*], providers: [{identity: {}}]}]\n", "encrypting the same resource across groups is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEncryptionConfiguration([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q in it", err, tc.want)
			}
		})
	}
}

func TestReloadingFollowsTheFile(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "enc.yaml")
	write := func(provider string) {
		doc := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [environments.platform.example.com]\n    providers:\n      - " + provider + "\n"
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("aescbc: {keys: [{name: one, secret: " + b64(32, 1) + "}]}")
	var reloads, failures atomic.Int32
	r, err := NewReloading(path, ReloadOptions{Interval: 10 * time.Millisecond,
		OnReload: func() { reloads.Add(1) }, OnError: func(error) { failures.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.Run(ctx) }()
	key := storage.ObjectKey("platform.example.com", "environments", "ns", "a")
	prefixOf := func() string {
		b, _ := r.TransformToStorage(ctx, []byte("{}"), key)
		return string(b[:min(len(b), 25)])
	}
	if p := prefixOf(); !strings.HasPrefix(p, "k8s:enc:aescbc:v1:one:") {
		t.Fatalf("first prefix %q", p)
	}
	write("secretbox: {keys: [{name: two, secret: " + b64(32, 2) + "}]}")
	waitFor(t, func() bool { return strings.HasPrefix(prefixOf(), "k8s:enc:secretbox:v1:two:") })
	// A bad file keeps the last good configuration.
	write("aescbc: {keys: [{name: three, secret: short}]}")
	waitFor(t, func() bool { return failures.Load() > 0 })
	if !strings.HasPrefix(prefixOf(), "k8s:enc:secretbox:v1:two:") || reloads.Load() != 1 {
		t.Fatalf("after a bad file: prefix %q, %d reloads", prefixOf(), reloads.Load())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
