// This file holds AES-GCM and the prefix list that implements key rotation.

package value

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"strings"
)

// nonceSize is AES-GCM's standard nonce size, the one kube-apiserver uses.
const nonceSize = 12

// AESGCM seals values with one AES key (16, 24 or 32 bytes) and a random
// nonce: nonce, then ciphertext and tag. The storage key is the additional
// authenticated data. It adds no prefix: [NewPrefixTransformers] does.
type AESGCM struct {
	aead cipher.AEAD
}

var _ Transformer = (*AESGCM)(nil)

// NewAESGCMTransformer returns the AES-GCM transformer of one key.
func NewAESGCMTransformer(secret []byte) (*AESGCM, error) {
	block, err := aesBlock(secret)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidKey, err)
	}
	return &AESGCM{aead: aead}, nil
}

// aesBlock is the AES cipher of a 16, 24 or 32-byte key.
func aesBlock(secret []byte) (cipher.Block, error) {
	switch len(secret) {
	case 16, 24, 32:
	default:
		return nil, fmt.Errorf("%w: AES keys are 16, 24 or 32 bytes, got %d", ErrInvalidKey, len(secret))
	}
	block, err := aes.NewCipher(secret)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidKey, err)
	}
	return block, nil
}

// TransformToStorage seals data.
func (t *AESGCM) TransformToStorage(_ context.Context, data []byte, key string) ([]byte, error) {
	out := make([]byte, nonceSize, nonceSize+len(data)+t.aead.Overhead())
	_, _ = rand.Read(out) // crypto/rand.Read never fails (Go 1.24+).
	return t.aead.Seal(out, out[:nonceSize], data, []byte(key)), nil
}

// TransformFromStorage opens data.
func (t *AESGCM) TransformFromStorage(_ context.Context, data []byte, key string) ([]byte, bool, error) {
	if len(data) < nonceSize+t.aead.Overhead() {
		return nil, false, fmt.Errorf("%w: value too short", ErrDecrypt)
	}
	out, err := t.aead.Open(nil, data[:nonceSize], data[nonceSize:], []byte(key))
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrDecrypt, err)
	}
	return out, false, nil
}

// PrefixTransformer is one provider of a list: the values whose stored form
// starts with Prefix belong to Transformer.
type PrefixTransformer struct {
	// Prefix marks the provider's values; empty matches every value (the
	// identity fallback, which must come last).
	Prefix []byte
	// Transformer handles the bytes after Prefix.
	Transformer Transformer
}

// PrefixTransformers is an ordered provider list.
type PrefixTransformers struct {
	providers []PrefixTransformer
}

var _ Transformer = (*PrefixTransformers)(nil)

// NewPrefixTransformers returns the list: the first provider writes; reading
// uses the first provider whose prefix the value starts with.
func NewPrefixTransformers(providers ...PrefixTransformer) *PrefixTransformers {
	return &PrefixTransformers{providers: providers}
}

// TransformToStorage writes with the first provider, prefix first.
func (p *PrefixTransformers) TransformToStorage(ctx context.Context, data []byte, key string) ([]byte, error) {
	if len(p.providers) == 0 {
		return data, nil
	}
	first := p.providers[0]
	out, err := first.Transformer.TransformToStorage(ctx, data, key)
	if err != nil {
		return nil, err
	}
	if len(first.Prefix) == 0 {
		return out, nil
	}
	b := make([]byte, 0, len(first.Prefix)+len(out))
	return append(append(b, first.Prefix...), out...), nil
}

// TransformFromStorage reads with the provider whose prefix data carries;
// stale unless that is the first provider. The identity provider (empty
// prefix) never reads a value with an encryption prefix ("k8s:enc:"): an
// identity listed first, to decrypt everything on the way out of
// encryption, leaves those to the providers after it.
func (p *PrefixTransformers) TransformFromStorage(ctx context.Context, data []byte, key string) ([]byte, bool, error) {
	for i, pt := range p.providers {
		if !bytes.HasPrefix(data, pt.Prefix) {
			continue
		}
		if len(pt.Prefix) == 0 && bytes.HasPrefix(data, encryptedPrefix) {
			continue
		}
		out, stale, err := pt.Transformer.TransformFromStorage(ctx, data[len(pt.Prefix):], key)
		if err != nil {
			return nil, false, err
		}
		return out, stale || i != 0, nil
	}
	if len(p.providers) == 0 {
		return data, false, nil
	}
	return nil, false, ErrNoMatchingPrefix
}

// encryptedPrefix starts every encrypted value's prefix.
var encryptedPrefix = []byte("k8s:enc:")

// Key is one named AES key.
type Key struct {
	// Name appears in the stored prefix; it may not contain ':'.
	Name string
	// Secret is the AES key: 16, 24 or 32 bytes.
	Secret []byte
}

// AESGCMPrefix is the stored prefix of values sealed with the key named name.
func AESGCMPrefix(name string) []byte { return []byte("k8s:enc:aesgcm:v1:" + name + ":") }

// NewAESGCM returns the provider list of an aesgcm provider with keys (the
// first encrypts, all decrypt), followed, when identityFallback is set, by
// the identity provider that reads values stored in plaintext.
func NewAESGCM(keys []Key, identityFallback bool) (*PrefixTransformers, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no keys", ErrInvalidKey)
	}
	seen := map[string]bool{}
	var ps []PrefixTransformer
	for _, k := range keys {
		if k.Name == "" || strings.Contains(k.Name, ":") || seen[k.Name] {
			return nil, fmt.Errorf("%w: key name %q is empty, repeated or contains ':'", ErrInvalidKey, k.Name)
		}
		seen[k.Name] = true
		t, err := NewAESGCMTransformer(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k.Name, err)
		}
		ps = append(ps, PrefixTransformer{Prefix: AESGCMPrefix(k.Name), Transformer: t})
	}
	if identityFallback {
		ps = append(ps, PrefixTransformer{Transformer: Identity{}})
	}
	return NewPrefixTransformers(ps...), nil
}
