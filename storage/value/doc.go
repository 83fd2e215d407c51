// Package value transforms object bytes on their way into and out of a
// storage backend: encryption at rest.
//
// A [Transformer] turns the bytes of an object into what the backend stores
// and back. Both backends (storage/bbolt and storage/etcd) take one in their
// options and call it with the object's storage key (see
// [storage.ObjectKey]), which [Router] uses to pick a transformer per
// resource and AES-GCM uses as additional authenticated data, so that a value
// copied under another key does not decrypt.
//
// The stored form is the one kube-apiserver writes for its aesgcm provider:
// the prefix "k8s:enc:aesgcm:v1:<keyname>:", a 12-byte random nonce, then
// the AES-GCM sealed bytes (ciphertext and 16-byte tag), with the key as
// additional data. [NewPrefixTransformers] implements key rotation as an
// EncryptionConfiguration's provider list does: the first provider encrypts,
// every provider decrypts the values carrying its prefix, and an
// [Identity] provider (empty prefix) reads the plaintext written before
// encryption was turned on.
//
//	t, err := value.NewAESGCM([]value.Key{{Name: "key2", Secret: k2}, {Name: "key1", Secret: k1}}, true)
//	router := value.Router{{Prefix: storage.ResourcePrefix("platform.example.com", "environments", ""), Transformer: t}}
//	store, err := bbolt.Open(path, bbolt.Options{Transformer: router})
package value
