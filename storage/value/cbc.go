// This file holds AES-CBC and secretbox, kube-apiserver's other two local
// providers, in their stored forms.

package value

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"

	"golang.org/x/crypto/nacl/secretbox"
)

// AESCBC encrypts values with one AES key (16, 24 or 32 bytes) in CBC mode
// with PKCS#7 padding: a random 16-byte IV, then the ciphertext, as
// kube-apiserver's aescbc provider (which has no authentication: kube
// discourages it, and so do we; it is here so that data written by either
// server reads in the other). It adds no prefix: [NewPrefixTransformers]
// does.
type AESCBC struct {
	block cipher.Block
}

var _ Transformer = (*AESCBC)(nil)

// NewAESCBCTransformer returns the AES-CBC transformer of one key.
func NewAESCBCTransformer(secret []byte) (*AESCBC, error) {
	block, err := aesBlock(secret)
	if err != nil {
		return nil, err
	}
	return &AESCBC{block: block}, nil
}

// TransformToStorage encrypts data.
func (t *AESCBC) TransformToStorage(_ context.Context, data []byte, _ string) ([]byte, error) {
	bs := aes.BlockSize
	pad := bs - len(data)%bs
	out := make([]byte, bs+len(data)+pad)
	iv := out[:bs]
	_, _ = rand.Read(iv) // crypto/rand.Read never fails (Go 1.24+).
	body := out[bs:]
	copy(body, data)
	for i := len(data); i < len(body); i++ {
		body[i] = byte(pad)
	}
	cipher.NewCBCEncrypter(t.block, iv).CryptBlocks(body, body)
	return out, nil
}

// The errors of a value that is not AES-CBC of this key.
var (
	errCBCShort   = errors.New("the stored data was shorter than the required size")
	errCBCBlocks  = errors.New("the stored data is not a multiple of the block size")
	errCBCPadding = errors.New("invalid PKCS7 data (empty or not padded)")
)

// TransformFromStorage decrypts data. A wrong key shows as bad padding
// (almost always): CBC cannot tell otherwise.
func (t *AESCBC) TransformFromStorage(_ context.Context, data []byte, _ string) ([]byte, bool, error) {
	bs := aes.BlockSize
	if len(data) < 2*bs {
		return nil, false, fmt.Errorf("%w: %w", ErrDecrypt, errCBCShort)
	}
	if len(data)%bs != 0 {
		return nil, false, fmt.Errorf("%w: %w", ErrDecrypt, errCBCBlocks)
	}
	out := make([]byte, len(data)-bs)
	cipher.NewCBCDecrypter(t.block, data[:bs]).CryptBlocks(out, data[bs:])
	pad := int(out[len(out)-1])
	if pad == 0 || pad > bs || pad > len(out) {
		return nil, false, fmt.Errorf("%w: %w", ErrDecrypt, errCBCPadding)
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, false, fmt.Errorf("%w: %w", ErrDecrypt, errCBCPadding)
		}
	}
	return out[:len(out)-pad], false, nil
}

// Secretbox seals values with NaCl's secretbox (XSalsa20 and Poly1305) and
// one 32-byte key: a random 24-byte nonce, then the sealed bytes, as
// kube-apiserver's secretbox provider.
type Secretbox struct {
	key [32]byte
}

var _ Transformer = (*Secretbox)(nil)

const secretboxNonceSize = 24

// NewSecretboxTransformer returns the secretbox transformer of one key.
func NewSecretboxTransformer(secret []byte) (*Secretbox, error) {
	if len(secret) != 32 {
		return nil, fmt.Errorf("%w: secretbox keys are 32 bytes, got %d", ErrInvalidKey, len(secret))
	}
	t := &Secretbox{}
	copy(t.key[:], secret)
	return t, nil
}

// TransformToStorage seals data.
func (t *Secretbox) TransformToStorage(_ context.Context, data []byte, _ string) ([]byte, error) {
	var nonce [secretboxNonceSize]byte
	_, _ = rand.Read(nonce[:])
	out := make([]byte, secretboxNonceSize, secretboxNonceSize+len(data)+secretbox.Overhead)
	copy(out, nonce[:])
	return secretbox.Seal(out, data, &nonce, &t.key), nil
}

// TransformFromStorage opens data.
func (t *Secretbox) TransformFromStorage(_ context.Context, data []byte, _ string) ([]byte, bool, error) {
	if len(data) < secretboxNonceSize+secretbox.Overhead {
		return nil, false, fmt.Errorf("%w: the stored data was shorter than the required size", ErrDecrypt)
	}
	var nonce [secretboxNonceSize]byte
	copy(nonce[:], data[:secretboxNonceSize])
	out, ok := secretbox.Open(nil, data[secretboxNonceSize:], &nonce, &t.key)
	if !ok {
		return nil, false, fmt.Errorf("%w: output array was not large enough for encryption", ErrDecrypt)
	}
	return out, false, nil
}

// AESCBCPrefix and SecretboxPrefix are the stored prefixes of values
// written with the key named name.
func AESCBCPrefix(name string) []byte { return []byte("k8s:enc:aescbc:v1:" + name + ":") }

// SecretboxPrefix is the stored prefix of secretbox values of key name.
func SecretboxPrefix(name string) []byte { return []byte("k8s:enc:secretbox:v1:" + name + ":") }
