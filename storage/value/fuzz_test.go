package value

import (
	"bytes"
	"context"
	"testing"
)

// FuzzEncryptionRoundtrip writes any value under each local provider and
// reads it back, and reads any stored bytes with every provider: a round
// trip gives the value back, and no input makes a provider panic.
func FuzzEncryptionRoundtrip(f *testing.F) {
	f.Add([]byte(`{"spec":{"owner":"x"}}`), []byte("k8s:enc:aescbc:v1:k:0123456789abcdef0123456789abcdef"), "/g/r/ns/n")
	f.Add([]byte{}, []byte{}, "")
	f.Add(bytes.Repeat([]byte{16}, 32), bytes.Repeat([]byte{16}, 48), "/core/secrets/a")
	k32 := bytes.Repeat([]byte{1}, 32)
	gcm, _ := NewAESGCM([]Key{{Name: "k", Secret: k32}}, true)
	cbc, _ := NewAESCBCTransformer(k32)
	box, _ := NewSecretboxTransformer(k32)
	providers := []Transformer{gcm, cbc, box,
		NewPrefixTransformers(PrefixTransformer{Prefix: AESCBCPrefix("k"), Transformer: cbc}, PrefixTransformer{Transformer: Identity{}})}
	f.Fuzz(func(t *testing.T, plain, stored []byte, key string) {
		ctx := context.Background()
		for _, p := range providers {
			out, err := p.TransformToStorage(ctx, plain, key)
			if err != nil {
				t.Fatal(err)
			}
			back, _, err := p.TransformFromStorage(ctx, out, key)
			if err != nil || !bytes.Equal(back, plain) {
				t.Fatalf("round trip of %q: %q, %v", plain, back, err)
			}
			_, _, _ = p.TransformFromStorage(ctx, stored, key)
		}
	})
}
