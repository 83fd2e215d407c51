// This file holds the byte layout of the records in the file (object index
// entries and event log entries) and the lookups that join them: every
// object's JSON is stored once, in the log entry of the write that produced
// it.

package bbolt

import (
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
	"github.com/annexapi/annex/storage/value"
)

// Bucket names and meta keys.
const (
	bucketObjects = "objects"
	bucketEvents  = "events"
	bucketMeta    = "meta"
	// keyRevision is the revision recorded when the file was created; the
	// current revision is the larger of it and the last log entry's.
	keyRevision = "revision"
	// keyCompacted is the compacted revision, written only by Compact.
	keyCompacted = "compacted"
	// keyPruned is the revision up to which compaction has pruned the log
	// (at most keyCompacted; behind it while a compaction is under way or
	// was interrupted).
	keyPruned = "pruned"
	// keyFormat is the layout version of the file.
	keyFormat = "format"
)

// fileFormat is the layout this package reads and writes.
const fileFormat = 2

// initialRevision is the revision of a new file: the first write gets 2, so
// that no list ever carries resourceVersion "0" (etcd also starts at 1).
const initialRevision = 1

// initialise creates the buckets of a new file, recording initialRevision and
// the format, checks the layout of an existing one, and returns the file's
// current revision.
func initialise(tx *bolt.Tx) (uint64, error) {
	if tx.Bucket([]byte(bucketMeta)) == nil {
		for _, name := range []string{bucketObjects, bucketEvents, bucketMeta} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return 0, err
			}
		}
		m := tx.Bucket([]byte(bucketMeta))
		if err := m.Put([]byte(keyRevision), putUint64(nil, initialRevision)); err != nil {
			return 0, err
		}
		if err := m.Put([]byte(keyFormat), putUint64(nil, fileFormat)); err != nil {
			return 0, err
		}
	}
	if f := getUint64(tx.Bucket([]byte(bucketMeta)).Get([]byte(keyFormat))); f != fileFormat {
		return 0, fmt.Errorf("file format %d, want %d: %w", f, fileFormat, errCorrupt)
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

// An "objects" record is the key's mod revision, 8 bytes big-endian: the
// revision of the log entry that holds its JSON.

// Event log entry: kind byte, uvarint key length, key, uvarint revision of the
// key's previous state (0 when the key did not exist), then for a put the
// object's JSON, final (resourceVersion set). A delete has no value: the
// deleted state is the previous one, with the deletion's resource version.
const (
	entryPut    byte = 'p'
	entryDelete byte = 'd'
)

type entry struct {
	kind    byte
	key     []byte
	prevRev uint64
	value   []byte
}

func encodeEntry(kind byte, key string, prevRev uint64, value []byte) []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(key)+len(value))
	b = append(b, kind)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.AppendUvarint(b, prevRev)
	return append(b, value...)
}

// decodeEntry splits an entry; the slices alias v.
func decodeEntry(v []byte) (entry, error) {
	if len(v) < 1 || (v[0] != entryPut && v[0] != entryDelete) {
		return entry{}, errCorrupt
	}
	e := entry{kind: v[0]}
	rest := v[1:]
	n, w := binary.Uvarint(rest)
	if w <= 0 || uint64(len(rest)-w) < n {
		return entry{}, errCorrupt
	}
	e.key, rest = rest[w:w+int(n)], rest[w+int(n):]
	e.prevRev, w = binary.Uvarint(rest)
	if w <= 0 {
		return entry{}, errCorrupt
	}
	e.value = rest[w:]
	if e.kind == entryPut && len(e.value) == 0 {
		return entry{}, errCorrupt
	}
	return e, nil
}

func corrupt(key string, err error) error {
	return &storage.Error{Err: storage.ErrInvalidObject, Key: key, Msg: "stored record: " + err.Error()}
}

// valueAt returns the JSON of key's state written at rev (a put), aliasing
// the transaction's memory. log is a cursor on the "events" bucket, reused
// across lookups (one cursor per Bucket.Get would allocate each time).
//
// With a transformer (Options.Transformer), the stored value is decrypted
// into fresh memory.
func valueAt(tr value.Transformer, log *bolt.Cursor, key string, rev uint64) ([]byte, error) {
	var rk [8]byte
	binary.BigEndian.PutUint64(rk[:], rev)
	k, v := log.Seek(rk[:])
	if k == nil || getUint64(k) != rev {
		return nil, corrupt(key, fmt.Errorf("log entry %d missing", rev))
	}
	e, err := decodeEntry(v)
	if err != nil {
		return nil, corrupt(key, err)
	}
	if e.kind != entryPut || string(e.key) != key {
		return nil, corrupt(key, fmt.Errorf("log entry %d is not a write of this key", rev))
	}
	return fromStorage(tr, key, e.value)
}

// current returns key's mod revision and JSON (aliasing the transaction's
// memory); rev is 0 when the key does not exist.
func current(tr value.Transformer, tx *bolt.Tx, key string) (rev uint64, data []byte, err error) {
	v := tx.Bucket([]byte(bucketObjects)).Get([]byte(key))
	if v == nil {
		return 0, nil, nil
	}
	if len(v) != 8 {
		return 0, nil, corrupt(key, errCorrupt)
	}
	rev = getUint64(v)
	data, err = valueAt(tr, tx.Bucket([]byte(bucketEvents)).Cursor(), key, rev)
	return rev, data, err
}

// objectAt reads key's state written at rev into an Object.
func objectAt(tr value.Transformer, log *bolt.Cursor, key string, rev uint64) (storage.Object, error) {
	data, err := valueAt(tr, log, key, rev)
	if err != nil {
		return storage.Object{}, err
	}
	return makeObject(key, rev, data)
}

// toStorage returns the stored form of an object's JSON: data itself
// without a transformer.
func toStorage(tr value.Transformer, key string, data []byte) ([]byte, error) {
	if tr == nil {
		return data, nil
	}
	out, err := tr.TransformToStorage(context.Background(), data, key)
	if err != nil {
		return nil, &storage.Error{Err: storage.ErrInvalidObject, Key: key, Msg: "transform to storage: " + err.Error()}
	}
	return out, nil
}

// fromStorage returns an object's JSON from its stored form.
func fromStorage(tr value.Transformer, key string, stored []byte) ([]byte, error) {
	if tr == nil {
		return stored, nil
	}
	out, _, err := tr.TransformFromStorage(context.Background(), stored, key)
	if err != nil {
		return nil, &storage.Error{Err: storage.ErrInvalidObject, Key: key, Msg: "transform from storage: " + err.Error()}
	}
	return out, nil
}

// makeObject copies data out of a transaction into an Object, whose
// metadata strings are views into that copy (see backend.DecodeMetaOf): the
// watch cache keeps such objects for their lifetime.
func makeObject(key string, rev uint64, data []byte) (storage.Object, error) {
	d := make([]byte, len(data))
	copy(d, data)
	m, err := backend.DecodeMetaOf(d)
	if err != nil {
		return storage.Object{}, &storage.Error{Err: storage.ErrInvalidObject, Key: key, Msg: "stored object: " + err.Error()}
	}
	return storage.Object{Key: key, ResourceVersion: rev, Data: d, Meta: m}, nil
}
