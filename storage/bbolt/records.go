// This file holds the byte layout of the records in the file: object values
// (mod revision + JSON) and event log entries.

package bbolt

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/annexapi/annex/storage"
)

// Bucket names and meta keys.
const (
	bucketObjects = "objects"
	bucketEvents  = "events"
	bucketMeta    = "meta"
	keyRevision   = "revision"
	keyCompacted  = "compacted"
)

// encodeValue is an object's record: 8-byte big-endian mod revision, then the
// JSON bytes.
func encodeValue(rev uint64, data []byte) []byte {
	v := make([]byte, 8+len(data))
	binary.BigEndian.PutUint64(v, rev)
	copy(v[8:], data)
	return v
}

func decodeValue(v []byte) (rev uint64, data []byte, err error) {
	if len(v) < 8 {
		return 0, nil, errCorrupt
	}
	return binary.BigEndian.Uint64(v), v[8:], nil
}

// initialRevision is the revision of a new file: the first write gets 2, so
// that no list ever carries resourceVersion "0" (etcd also starts at 1).
const initialRevision = 1

// initialise creates the buckets of a new file, recording initialRevision,
// and returns the file's current revision.
func initialise(tx *bolt.Tx) (uint64, error) {
	if tx.Bucket([]byte(bucketMeta)) == nil {
		for _, name := range []string{bucketObjects, bucketEvents, bucketMeta} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return 0, err
			}
		}
		if err := tx.Bucket([]byte(bucketMeta)).Put([]byte(keyRevision), putUint64(nil, initialRevision)); err != nil {
			return 0, err
		}
	}
	for _, name := range []string{bucketObjects, bucketEvents} {
		if tx.Bucket([]byte(name)) == nil {
			return 0, fmt.Errorf("bucket %q missing: %w", name, errCorrupt)
		}
	}
	rev, _ := readMeta(tx)
	return rev, nil
}

func revKey(rev uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], rev)
	return k[:]
}

func putUint64(b []byte, n uint64) []byte { return binary.BigEndian.AppendUint64(b, n) }

func getUint64(v []byte) uint64 {
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// Event log entry: kind byte, uvarint key length, key, uvarint value length,
// value (the new object, or for a delete the last state with the deletion's
// resource version), then the previous object record (encodeValue form),
// empty when the key did not exist.
const (
	entryPut    byte = 'p'
	entryDelete byte = 'd'
)

type entry struct {
	kind  byte
	key   []byte
	value []byte
	prev  []byte
}

func encodeEntry(kind byte, key string, value, prev []byte) []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen32+len(key)+len(value)+len(prev))
	b = append(b, kind)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.AppendUvarint(b, uint64(len(value)))
	b = append(b, value...)
	return append(b, prev...)
}

// decodeEntry splits an entry; the slices alias v.
func decodeEntry(v []byte) (entry, error) {
	if len(v) < 1 {
		return entry{}, errCorrupt
	}
	e := entry{kind: v[0]}
	rest := v[1:]
	n, w := binary.Uvarint(rest)
	if w <= 0 || uint64(len(rest)-w) < n {
		return entry{}, errCorrupt
	}
	e.key, rest = rest[w:w+int(n)], rest[w+int(n):]
	n, w = binary.Uvarint(rest)
	if w <= 0 || uint64(len(rest)-w) < n {
		return entry{}, errCorrupt
	}
	e.value, e.prev = rest[w:w+int(n)], rest[w+int(n):]
	return e, nil
}

// makeObject copies data out of a transaction into an Object.
func makeObject(key string, rev uint64, data []byte) (storage.Object, error) {
	d := make([]byte, len(data))
	copy(d, data)
	m, err := storage.DecodeMeta(d)
	if err != nil {
		return storage.Object{}, &storage.Error{Err: storage.ErrInvalidObject, Key: key, Msg: "stored object: " + err.Error()}
	}
	return storage.Object{Key: key, ResourceVersion: rev, Data: d, Meta: m}, nil
}

// objectFromValue decodes an object record.
func objectFromValue(key string, v []byte) (storage.Object, error) {
	rev, data, err := decodeValue(v)
	if err != nil {
		return storage.Object{}, &storage.Error{Err: storage.ErrInvalidObject, Key: key, Msg: err.Error()}
	}
	return makeObject(key, rev, data)
}
