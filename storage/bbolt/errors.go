// This file holds the package's sentinel errors.

package bbolt

import "errors"

// errCorrupt is returned (wrapped in a *storage.Error with ErrInvalidObject)
// when a record in the file does not have the layout this package writes.
var errCorrupt = errors.New("corrupt record")
