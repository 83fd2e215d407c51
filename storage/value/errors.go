// This file holds the package's sentinel errors.

package value

import "errors"

var (
	// ErrNoMatchingPrefix is returned when a stored value carries the prefix
	// of no configured provider and no identity provider is configured.
	ErrNoMatchingPrefix = errors.New("no matching prefix found")
	// ErrDecrypt is returned when a value carries a provider's prefix but
	// does not open with its key (wrong key, tampering, another storage key).
	ErrDecrypt = errors.New("unable to decrypt value")
	// ErrInvalidKey is returned for a key of the wrong size or a bad name.
	ErrInvalidKey = errors.New("invalid encryption key")
)
