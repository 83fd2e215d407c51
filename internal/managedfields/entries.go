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

	"github.com/annexapi/annex/internal/jsonenc"
	"github.com/annexapi/annex/internal/jsonscan"
	"github.com/annexapi/annex/meta"
)

// managed is an object's field ownership: the sets by manager identifier,
// and the time each entry was last changed.
type managed struct {
	fields fieldpath.ManagedFields
	times  map[string]*meta.Time
	// decoded are the sets as decoded, by manager: a set the write left
	// equal to its decoded one is printed as that one (cached).
	decoded map[string]*fieldpath.Set
}

func emptyManaged() managed {
	return managed{fields: fieldpath.ManagedFields{}, times: map[string]*meta.Time{}}
}

// identifier is kube's BuildManagerIdentifier: the entry as JSON without
// fieldsType, fieldsV1 and time, and without apiVersion for an Apply. It
// writes what json.Marshal writes for such an entry (the fields in their
// declared order, empty ones left out), without reflection: every write
// builds one per entry of the object and one for itself.
func identifier(e meta.ManagedFieldsEntry) string {
	if e.Operation == meta.ManagedFieldsOperationApply {
		e.APIVersion = ""
	}
	var buf [128]byte
	b := append(buf[:0], '{')
	for _, f := range [...]struct{ name, v string }{
		{`"manager":`, e.Manager}, {`"operation":`, e.Operation}, {`"apiVersion":`, e.APIVersion}, {`"subresource":`, e.Subresource},
	} {
		if f.v == "" {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, f.name...)
		b = jsonenc.AppendString(b, f.v)
	}
	return string(append(b, '}'))
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
		return parseEntries(v)
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
		// [{}], spaced or not.
		want := "[{}]"
		for _, c := range v {
			switch {
			case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			case len(want) > 0 && c == want[0]:
				want = want[1:]
			default:
				return false
			}
		}
		return want == ""
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
		if out.decoded == nil {
			out.decoded = make(map[string]*fieldpath.Set, len(list))
		}
		out.decoded[id] = set
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
		e, err := parseEntry([]byte(id))
		if err != nil {
			return fmt.Errorf("error unmarshalling manager identifier %v: %w", id, err)
		}
		e.APIVersion = string(vs.APIVersion())
		if vs.Applied() {
			e.Operation = meta.ManagedFieldsOperationApply
		}
		e.FieldsType = meta.FieldsTypeV1
		set := vs.Set()
		if d, ok := m.decoded[id]; ok && d != set && set.Equals(d) {
			set = d
		}
		fv, err := c.doc(set)
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
		b = jsonenc.AppendString(b, e.APIVersion)
		b = append(b, `,"fieldsType":`...)
		b = jsonenc.AppendString(b, e.FieldsType)
		b = append(b, `,"fieldsV1":`...)
		b = append(b, e.FieldsV1...)
		if e.Manager != "" {
			b = append(b, `,"manager":`...)
			b = jsonenc.AppendString(b, e.Manager)
		}
		b = append(b, `,"operation":`...)
		b = jsonenc.AppendString(b, e.Operation)
		if e.Subresource != "" {
			b = append(b, `,"subresource":`...)
			b = jsonenc.AppendString(b, e.Subresource)
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
	mu   sync.Mutex
	sets map[string]*fieldpath.Set
	docs map[*fieldpath.Set][]byte
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

// parseEntries reads entries from their JSON (an array of objects) without
// reflection: the members kube writes, strings as they are when they hold
// no escape, fieldsV1 as its bytes. Other members are skipped.
func parseEntries(b []byte) ([]meta.ManagedFieldsEntry, error) {
	bad := errors.New("managedFields: malformed JSON")
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, bad
	}
	var out []meta.ManagedFieldsEntry
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, nil
	}
	for {
		if i >= len(b) || b[i] != '{' {
			return nil, bad
		}
		end := jsonscan.SkipValue(b, i)
		if end < 0 {
			return nil, bad
		}
		e, err := parseEntry(b[i:end])
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		i = jsonscan.SkipSpace(b, end)
		switch {
		case i < len(b) && b[i] == ',':
			i = jsonscan.SkipSpace(b, i+1)
		case i < len(b) && b[i] == ']':
			return out, nil
		default:
			return nil, bad
		}
	}
}

func parseEntry(b []byte) (meta.ManagedFieldsEntry, error) {
	var e meta.ManagedFieldsEntry
	bad := errors.New("managedFields: malformed entry")
	i := jsonscan.SkipSpace(b, 1)
	if i < len(b) && b[i] == '}' {
		return e, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return e, bad
		}
		ke := jsonscan.SkipString(b, i)
		if ke < 0 {
			return e, bad
		}
		key := b[i+1 : ke-1]
		c := jsonscan.SkipSpace(b, ke)
		if c >= len(b) || b[c] != ':' {
			return e, bad
		}
		vs := jsonscan.SkipSpace(b, c+1)
		ve := jsonscan.SkipValue(b, vs)
		if ve < 0 {
			return e, bad
		}
		v := b[vs:ve]
		var err error
		switch string(key) {
		case "manager":
			e.Manager, err = jsonString(v)
		case "operation":
			e.Operation, err = jsonString(v)
		case "apiVersion":
			e.APIVersion, err = jsonString(v)
		case "fieldsType":
			e.FieldsType, err = jsonString(v)
		case "subresource":
			e.Subresource, err = jsonString(v)
		case "fieldsV1":
			if string(v) != "null" {
				e.FieldsV1 = json.RawMessage(v)
			}
		case "time":
			var s string
			if s, err = jsonString(v); err == nil && s != "" {
				var t time.Time
				if t, err = time.Parse(time.RFC3339, s); err == nil {
					mt := meta.NewTime(t)
					e.Time = &mt
				}
			}
		}
		if err != nil {
			return e, fmt.Errorf("managedFields: %s: %w", key, err)
		}
		i = jsonscan.SkipSpace(b, ve)
		switch {
		case i < len(b) && b[i] == ',':
			i = jsonscan.SkipSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			return e, nil
		default:
			return e, bad
		}
	}
}

// jsonString decodes a JSON string (null is "").
func jsonString(v []byte) (string, error) {
	if string(v) == "null" {
		return "", nil
	}
	if len(v) < 2 || v[0] != '"' {
		return "", errors.New("not a string")
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), nil
	}
	var s string
	err := json.Unmarshal(v, &s)
	return s, err
}
