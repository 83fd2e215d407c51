package value

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

func key32(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func TestAESGCMFormat(t *testing.T) {
	tr, err := NewAESGCM([]Key{{Name: "key1", Secret: key32(1)}}, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	plain := []byte(`{"metadata":{"name":"a"},"data":"secret"}`)
	out, err := tr.TransformToStorage(ctx, plain, "/g/r/ns/a")
	if err != nil {
		t.Fatal(err)
	}
	prefix := []byte("k8s:enc:aesgcm:v1:key1:")
	if !bytes.HasPrefix(out, prefix) {
		t.Fatalf("stored form %q lacks the prefix %q", out, prefix)
	}
	if want := len(prefix) + 12 + len(plain) + 16; len(out) != want {
		t.Errorf("stored length %d, want prefix+nonce+plaintext+tag = %d", len(out), want)
	}
	if bytes.Contains(out, []byte("secret")) {
		t.Errorf("stored form holds the plaintext")
	}
	again, _ := tr.TransformToStorage(ctx, plain, "/g/r/ns/a")
	if bytes.Equal(out, again) {
		t.Errorf("two encryptions are equal: the nonce is not random")
	}
	got, stale, err := tr.TransformFromStorage(ctx, out, "/g/r/ns/a")
	if err != nil || stale || !bytes.Equal(got, plain) {
		t.Errorf("round trip = %q, stale %v, %v", got, stale, err)
	}
	// Open with the standard library directly: the layout is nonce || sealed,
	// AAD = key, as kube-apiserver's aesgcm provider writes.
	a, _ := NewAESGCMTransformer(key32(1))
	body := out[len(prefix):]
	if p, err := a.aead.Open(nil, body[:12], body[12:], []byte("/g/r/ns/a")); err != nil || !bytes.Equal(p, plain) {
		t.Errorf("direct AES-GCM open = %q, %v", p, err)
	}
}

func TestRotationAndFallback(t *testing.T) {
	ctx := context.Background()
	const k = "/g/r/ns/a"
	plain := []byte(`{"x":1}`)
	old, _ := NewAESGCM([]Key{{Name: "key1", Secret: key32(1)}}, false)
	byOld, _ := old.TransformToStorage(ctx, plain, k)
	rotated, err := NewAESGCM([]Key{{Name: "key2", Secret: key32(2)}, {Name: "key1", Secret: key32(1)}}, true)
	if err != nil {
		t.Fatal(err)
	}
	byNew, _ := rotated.TransformToStorage(ctx, plain, k)
	noFallback, _ := NewAESGCM([]Key{{Name: "key2", Secret: key32(2)}}, false)
	tests := []struct {
		name      string
		tr        Transformer
		stored    []byte
		key       string
		wantStale bool
		wantErr   error
	}{
		{name: "new_key_reads_own", tr: rotated, stored: byNew, key: k},
		{name: "old_key_still_decrypts", tr: rotated, stored: byOld, key: k, wantStale: true},
		{name: "identity_fallback_reads_plaintext", tr: rotated, stored: plain, key: k, wantStale: true},
		{name: "no_fallback_refuses_plaintext", tr: noFallback, stored: plain, key: k, wantErr: ErrNoMatchingPrefix},
		{name: "removed_key_fails", tr: noFallback, stored: byOld, key: k, wantErr: ErrNoMatchingPrefix},
		{name: "other_storage_key_fails", tr: rotated, stored: byNew, key: "/g/r/ns/b", wantErr: ErrDecrypt},
		{name: "tampered_fails", tr: rotated, stored: append(append([]byte{}, byNew[:len(byNew)-1]...), byNew[len(byNew)-1]^1), key: k, wantErr: ErrDecrypt},
		{name: "truncated_fails", tr: rotated, stored: byNew[:30], key: k, wantErr: ErrDecrypt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, stale, err := tt.tr.TransformFromStorage(ctx, tt.stored, tt.key)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || !bytes.Equal(got, plain) || stale != tt.wantStale {
				t.Errorf("got %q, stale %v, %v; want %q, stale %v", got, stale, err, plain, tt.wantStale)
			}
		})
	}
	if !bytes.HasPrefix(byNew, AESGCMPrefix("key2")) {
		t.Errorf("the first key does not encrypt: %q", byNew[:24])
	}
}

func TestNewAESGCMValidation(t *testing.T) {
	tests := []struct {
		name string
		keys []Key
	}{
		{name: "no_keys"},
		{name: "short_secret", keys: []Key{{Name: "a", Secret: make([]byte, 15)}}},
		{name: "empty_name", keys: []Key{{Secret: key32(1)}}},
		{name: "colon_in_name", keys: []Key{{Name: "a:b", Secret: key32(1)}}},
		{name: "repeated_name", keys: []Key{{Name: "a", Secret: key32(1)}, {Name: "a", Secret: key32(2)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewAESGCM(tt.keys, true); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("error = %v, want ErrInvalidKey", err)
			}
		})
	}
	for _, n := range []int{16, 24, 32} {
		if _, err := NewAESGCMTransformer(make([]byte, n)); err != nil {
			t.Errorf("%d-byte key: %v", n, err)
		}
	}
}

// marker is a transformer that tags what it stores, to see which route ran.
type marker string

func (m marker) TransformToStorage(_ context.Context, data []byte, _ string) ([]byte, error) {
	return append([]byte(m), data...), nil
}

func (m marker) TransformFromStorage(_ context.Context, data []byte, _ string) ([]byte, bool, error) {
	return bytes.TrimPrefix(data, []byte(m)), false, nil
}

func TestRouter(t *testing.T) {
	r := Router{
		{Prefix: "/g/secrets", Transformer: marker("A:")},
		{Prefix: "/g/secrets/special/", Transformer: marker("B:")},
	}
	tests := []struct {
		key, want string
	}{
		{key: "/g/secrets/ns/a", want: "A:x"},
		{key: "/g/secrets/special/a", want: "B:x"},
		{key: "/g/secretsx/ns/a", want: "x"},
		{key: "/g/other/ns/a", want: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			out, err := r.TransformToStorage(context.Background(), []byte("x"), tt.key)
			if err != nil || string(out) != tt.want {
				t.Errorf("stored %q, %v; want %q", out, err, tt.want)
			}
			back, _, err := r.TransformFromStorage(context.Background(), out, tt.key)
			if err != nil || string(back) != "x" {
				t.Errorf("read back %q, %v", back, err)
			}
		})
	}
}
