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

// entriesOf reads metadata.managedFields of a decoded object; ok is false
// when there is no such member or it is not a list.
func entriesOf(obj map[string]any) (list []any, present bool) {
	md, _ := obj["metadata"].(map[string]any)
	v, present := md["managedFields"]
	if !present || v == nil {
		return nil, false
	}
	list, _ = v.([]any)
	return list, true
}

// isReset says whether obj asks to clear its managed fields: a list of one
// empty entry, as kube documents it. An empty list does not (kube's
// custom resources lose it when their metadata is coerced, so that a client
// unaware of the field never clears it): the stored entries stay.
func isReset(obj map[string]any) bool {
	list, _ := entriesOf(obj)
	if len(list) != 1 {
		return false
	}
	m, ok := list[0].(map[string]any)
	return ok && len(m) == 0
}

// decode is kube's DecodeManagedFields over a decoded object's entries.
func decode(obj map[string]any) (managed, error) {
	list, _ := entriesOf(obj)
	out := managed{fields: make(fieldpath.ManagedFields, len(list)), times: make(map[string]*meta.Time, len(list))}
	for i, raw := range list {
		e, err := entryOf(raw)
		if err != nil {
			return managed{}, fmt.Errorf("managed fields entry %d: %w", i, err)
		}
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
		set := fieldpath.NewSet()
		fv := e.FieldsV1
		if len(fv) == 0 {
			fv = []byte("{}")
		}
		if err := set.FromJSON(bytes.NewReader(fv)); err != nil {
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
// obj's metadata.managedFields (removed when there are none).
func encode(obj map[string]any, m managed) error {
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
		fv, err := vs.Set().ToJSON()
		if err != nil {
			return fmt.Errorf("error encoding set: %w", err)
		}
		e.FieldsV1 = fv
		e.Time = m.times[id]
		entries = append(entries, e)
	}
	slices.SortFunc(entries, compareEntries)
	list := make([]any, len(entries))
	for i, e := range entries {
		list[i] = entryObject(e)
	}
	md["managedFields"] = list
	return nil
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

// entryObject is an entry as decoded JSON (fieldsV1 decoded too), the form
// the rest of a write works on.
func entryObject(e meta.ManagedFieldsEntry) map[string]any {
	m := map[string]any{"manager": e.Manager, "operation": e.Operation, "apiVersion": e.APIVersion, "fieldsType": e.FieldsType}
	if e.Manager == "" {
		delete(m, "manager")
	}
	if e.Time != nil {
		m["time"] = e.Time.UTC().Format(time.RFC3339)
	}
	if e.Subresource != "" {
		m["subresource"] = e.Subresource
	}
	var fv any
	if err := json.Unmarshal(e.FieldsV1, &fv); err == nil {
		m["fieldsV1"] = fv
	}
	return m
}
