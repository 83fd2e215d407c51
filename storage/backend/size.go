// This file holds the object size limit every backend states
// (storage.ObjectSizeLimiter) and enforces on its writes.

package backend

import (
	"strconv"

	"github.com/annexapi/annex/storage"
)

// DefaultMaxObjectSize is the largest object the etcd backend accepts under
// etcd's default request limit (--max-request-bytes, 1.5 MiB), less 16 KiB
// for the key, the transaction around the put and encryption at rest:
// 1,556,480 bytes. The bbolt backend uses the same limit by default, so that
// an object that fits one backend fits the other.
const DefaultMaxObjectSize = 1536<<10 - 16<<10

// CheckSize returns a *storage.Error matching storage.ErrTooLarge, naming
// both sizes, when max is positive and data is longer; else nil.
func CheckSize(key string, data []byte, max int) error {
	if max <= 0 || len(data) <= max {
		return nil
	}
	return &storage.Error{Err: storage.ErrTooLarge, Key: key,
		Msg: "the object is " + strconv.Itoa(len(data)) + " bytes, limit is " + strconv.Itoa(max)}
}

// LimitUpdate returns try with CheckSize applied to its result, for a
// backend's Update: a result over max fails the update before anything is
// committed.
func LimitUpdate(key string, max int, try storage.UpdateFunc) storage.UpdateFunc {
	if max <= 0 {
		return try
	}
	return func(cur storage.Object) ([]byte, error) {
		data, err := try(cur)
		if err == nil {
			err = CheckSize(key, data, max)
		}
		if err != nil {
			return nil, err
		}
		return data, nil
	}
}
