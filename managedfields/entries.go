// This file holds metadata.managedFields as it travels: decoding the entries
// of an object into structured-merge-diff's managers (keyed by kube's
// manager identifier) and encoding them back, sorted as kube sorts them.

package managedfields

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/annexapi/annex/meta"
)

// managed is an object's field ownership: the sets by manager identifier,
// and the time each entry was last changed.
type managed struct {
	fields fieldpath.ManagedFields
	times  map[string]*meta.Time
}

func emptyManaged() managed {
	return managed{fields: fieldpath.ManagedFields{}, times: map[string]*meta.Time{}}
}

// identifier is kube's BuildManagerIdentifier: the entry as JSON without
// fieldsType, fieldsV1 and time, and without apiVersion for an Apply.
func identifier(e meta.ManagedFieldsEntry) string {
	e.FieldsType, e.FieldsV1, e.Time = "", nil, nil
	if e.Operation == meta.ManagedFieldsOperationApply {
		e.APIVersion = ""
	}
	b, _ := json.Marshal(e) // strings only: cannot fail
	return string(b)
}

// entriesOf reads metadata.managedFields of a decoded object: the entries,
// from decoded JSON or from the bytes the rest package keeps them as
// (json.RawMessage).
func entriesOf(obj map[string]any) ([]meta.ManagedFieldsEntry, error) {
	md, _ := obj["metadata"].(map[string]any)
	switch v := md["managedFields"].(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		var out []meta.ManagedFieldsEntry
		if err := json.Unmarshal(v, &out); err != nil {
			return nil, err
		}
		return out, nil
	case []any:
		out := make([]meta.ManagedFieldsEntry, len(v))
		for i, raw := range v {
			e, err := entryOf(raw)
			if err != nil {
				return nil, fmt.Errorf("managed fields entry %d: %w", i, err)
			}
			out[i] = e
		}
		return out, nil
	default:
		return nil, errors.New("managedFields must be a list")
	}
}

// isReset says whether obj asks to clear its managed fields: a list of one
// empty entry, as kube documents it. An empty list does not (kube's
// custom resources lose it when their metadata is coerced, so that a client
// unaware of the field never clears it): the stored entries stay.
func isReset(obj map[string]any) bool {
	md, _ := obj["metadata"].(map[string]any)
	switch v := md["managedFields"].(type) {
	case json.RawMessage:
		var list []map[string]any
		return json.Unmarshal(v, &list) == nil && len(list) == 1 && len(list[0]) == 0
	case []any:
		if len(v) != 1 {
			return false
		}
		m, ok := v[0].(map[string]any)
		return ok && len(m) == 0
	}
	return false
}

// decode is kube's DecodeManagedFields over a decoded object's entries;
// sets come from the cache when their bytes were seen before.
func (c *setCache) decode(obj map[string]any) (managed, error) {
	list, err := entriesOf(obj)
	if err != nil {
		return managed{}, err
	}
	out := managed{fields: make(fieldpath.ManagedFields, len(list)), times: make(map[string]*meta.Time, len(list))}
	for i, e := range list {
		switch e.Operation {
		case meta.ManagedFieldsOperationApply, meta.ManagedFieldsOperationUpdate:
		default:
			return managed{}, errors.New("operation must be `Apply` or `Update`")
		}
		if e.APIVersion == "" {
			return managed{}, errors.New("apiVersion must not be empty")
		}
		switch e.FieldsType {
		case meta.FieldsTypeV1:
		case "":
			return managed{}, fmt.Errorf("missing fieldsType in managed fields entry %d", i)
		default:
			return managed{}, fmt.Errorf("invalid fieldsType %q in managed fields entry %d", e.FieldsType, i)
		}
		fv := e.FieldsV1
		if len(fv) == 0 {
			fv = []byte("{}")
		}
		set, err := c.parse(fv)
		if err != nil {
			return managed{}, fmt.Errorf("error decoding set: %w", err)
		}
		id := identifier(e)
		out.fields[id] = fieldpath.NewVersionedSet(set, fieldpath.APIVersion(e.APIVersion), e.Operation == meta.ManagedFieldsOperationApply)
		out.times[id] = e.Time
	}
	return out, nil
}

// entryOf converts one decoded entry.
func entryOf(raw any) (meta.ManagedFieldsEntry, error) {
	var e meta.ManagedFieldsEntry
	m, ok := raw.(map[string]any)
	if !ok {
		return e, errors.New("not an object")
	}
	str := func(k string) (string, error) {
		v, ok := m[k]
		if !ok || v == nil {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%s must be a string", k)
		}
		return s, nil
	}
	var err error
	for _, f := range []struct {
		k string
		p *string
	}{{"manager", &e.Manager}, {"operation", &e.Operation}, {"apiVersion", &e.APIVersion}, {"fieldsType", &e.FieldsType}, {"subresource", &e.Subresource}} {
		if *f.p, err = str(f.k); err != nil {
			return e, err
		}
	}
	ts, err := str("time")
	if err != nil {
		return e, err
	}
	if ts != "" {
		t, err := time.Parse(time.RFC3339, ts)
		if err != nil {
			return e, fmt.Errorf("time: %w", err)
		}
		mt := meta.NewTime(t)
		e.Time = &mt
	}
	if fv, ok := m["fieldsV1"]; ok && fv != nil {
		if e.FieldsV1, err = json.Marshal(fv); err != nil {
			return e, err
		}
	}
	return e, nil
}

// encode is kube's EncodeObjectManagedFields: the entries, sorted by
// operation, time (seconds), manager, apiVersion and subresource, set as
// obj's metadata.managedFields (removed when there are none), as JSON
// bytes (json.RawMessage) with each entry's members in the order a custom
// resource's are written (alphabetical).
func (c *setCache) encode(obj map[string]any, m managed) error {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	if len(m.fields) == 0 {
		delete(md, "managedFields")
		return nil
	}
	entries := make([]meta.ManagedFieldsEntry, 0, len(m.fields))
	for id, vs := range m.fields {
		var e meta.ManagedFieldsEntry
		if err := json.Unmarshal([]byte(id), &e); err != nil {
			return fmt.Errorf("error unmarshalling manager identifier %v: %w", id, err)
		}
		e.APIVersion = string(vs.APIVersion())
		if vs.Applied() {
			e.Operation = meta.ManagedFieldsOperationApply
		}
		e.FieldsType = meta.FieldsTypeV1
		fv, err := c.doc(vs.Set())
		if err != nil {
			return fmt.Errorf("error encoding set: %w", err)
		}
		e.FieldsV1 = fv
		e.Time = m.times[id]
		entries = append(entries, e)
	}
	slices.SortFunc(entries, compareEntries)
	md["managedFields"] = json.RawMessage(appendEntries(nil, entries))
	return nil
}

// appendEntries appends the JSON of entries.
func appendEntries(b []byte, entries []meta.ManagedFieldsEntry) []byte {
	b = append(b, '[')
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"apiVersion":`...)
		b = appendString(b, e.APIVersion)
		b = append(b, `,"fieldsType":`...)
		b = appendString(b, e.FieldsType)
		b = append(b, `,"fieldsV1":`...)
		b = append(b, e.FieldsV1...)
		if e.Manager != "" {
			b = append(b, `,"manager":`...)
			b = appendString(b, e.Manager)
		}
		b = append(b, `,"operation":`...)
		b = appendString(b, e.Operation)
		if e.Subresource != "" {
			b = append(b, `,"subresource":`...)
			b = appendString(b, e.Subresource)
		}
		if e.Time != nil {
			b = append(b, `,"time":"`...)
			b = e.Time.UTC().AppendFormat(b, time.RFC3339)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendString appends s as a JSON string, as encoding/json writes it.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

func compareEntries(p, q meta.ManagedFieldsEntry) int {
	if c := strings.Compare(p.Operation, q.Operation); c != 0 {
		return c
	}
	if c := unixSeconds(p.Time) - unixSeconds(q.Time); c != 0 {
		if c < 0 {
			return -1
		}
		return 1
	}
	if c := strings.Compare(p.Manager, q.Manager); c != 0 {
		return c
	}
	if c := strings.Compare(p.APIVersion, q.APIVersion); c != 0 {
		return c
	}
	return strings.Compare(p.Subresource, q.Subresource)
}

func unixSeconds(t *meta.Time) int64 {
	if t == nil {
		return 0
	}
	return t.Unix()
}

// setCache interns field sets by their FieldsV1 bytes, both ways: the sets
// of a resource's objects repeat (every object one tool created has the
// same set for it, a controller's status set is the same on every write),
// and parsing and printing them is most of what tracking costs. Sets are
// never changed once made (structured-merge-diff's operations return new
// ones), so one may serve many objects. It holds at most maxCachedSets
// sets, and starts over when full.
type setCache struct {
	mu    sync.Mutex
	sets  map[string]*fieldpath.Set
	docs  map[*fieldpath.Set][]byte
}

const maxCachedSets = 4096

// parse returns the set of a FieldsV1 document.
func (c *setCache) parse(fv []byte) (*fieldpath.Set, error) {
	c.mu.Lock()
	s, ok := c.sets[string(fv)]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	s = fieldpath.NewSet()
	if err := s.FromJSON(bytes.NewReader(fv)); err != nil {
		return nil, err
	}
	canonical, err := s.ToJSON()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sets) >= maxCachedSets || c.sets == nil {
		c.sets, c.docs = map[string]*fieldpath.Set{}, map[*fieldpath.Set][]byte{}
	}
	// Bytes that are not the set's own printing (a client's order) are not
	// kept as its printing.
	c.sets[string(fv)] = s
	c.docs[s] = canonical
	return s, nil
}

// doc returns the FieldsV1 document of s.
func (c *setCache) doc(s *fieldpath.Set) ([]byte, error) {
	c.mu.Lock()
	b, ok := c.docs[s]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	return s.ToJSON()
}
