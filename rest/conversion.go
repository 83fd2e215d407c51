// This file holds the versions of a resource served at several versions:
// the Converter contract, its two built-in strategies (None and
// ConversionFuncs), and the two places objects cross versions: stored bytes
// read at a served version (asServed), and a written object stored at the
// storage version (toStorage).

package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/annexapi/annex/internal/jsonscan"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
	"github.com/annexapi/annex/storage"
)

// Converter converts objects between the versions of a resource served at
// several versions, as a CustomResourceDefinition's conversion strategy
// does. A nil Converter is None: only apiVersion changes.
type Converter interface {
	// Convert converts every object of objs, each carrying its apiVersion
	// (group/version), to desiredAPIVersion: in place, or by replacing the
	// element. objs never hold an object already at desiredAPIVersion. The
	// server keeps every object's metadata as it was but for labels and
	// annotations (what a CRD's conversion may change), and checks the
	// kind, apiVersion, name, namespace and uid of the result.
	Convert(ctx context.Context, objs []Object, desiredAPIVersion string) error
}

// ConversionFuncs is a Converter of Go functions, hub and spoke: each
// version but the hub converts to and from the hub version. Converting A to
// B is Funcs[A].ToHub then Funcs[B].FromHub; the server sets apiVersion
// after each function, so they only move fields.
type ConversionFuncs struct {
	// Hub is the version every other converts through, e.g. "v1beta1".
	// Empty means the storage version.
	Hub string
	// Funcs are the functions of each version but the hub, by version
	// name. A served version without both functions is a Build error.
	Funcs map[string]VersionConversion
}

// VersionConversion converts one version to and from the hub. Either
// function may edit obj in place; an error fails the request with a 500
// naming it, as a failed conversion webhook does.
type VersionConversion struct {
	ToHub   func(ctx context.Context, obj Object) error
	FromHub func(ctx context.Context, obj Object) error
}

// Convert implements Converter. hub is filled by NewHandler when Hub is
// empty (see versionSet).
func (c ConversionFuncs) Convert(ctx context.Context, objs []Object, desiredAPIVersion string) error {
	group, to := splitAPIVersion(desiredAPIVersion)
	for _, obj := range objs {
		av, _ := obj["apiVersion"].(string)
		_, from := splitAPIVersion(av)
		if from != c.Hub {
			f := c.Funcs[from].ToHub
			if f == nil {
				return fmt.Errorf("no conversion from %s to %s", av, group+"/"+c.Hub)
			}
			if err := f(ctx, obj); err != nil {
				return err
			}
			obj["apiVersion"] = group + "/" + c.Hub
		}
		if to != c.Hub {
			f := c.Funcs[to].FromHub
			if f == nil {
				return fmt.Errorf("no conversion from %s to %s", group+"/"+c.Hub, desiredAPIVersion)
			}
			if err := f(ctx, obj); err != nil {
				return err
			}
		}
		obj["apiVersion"] = desiredAPIVersion
	}
	return nil
}

// noConversion is the None strategy: only apiVersion changes.
type noConversion struct{}

func (noConversion) Convert(_ context.Context, objs []Object, desiredAPIVersion string) error {
	for _, obj := range objs {
		obj["apiVersion"] = desiredAPIVersion
	}
	return nil
}

func splitAPIVersion(av string) (group, version string) {
	if i := strings.LastIndexByte(av, '/'); i >= 0 {
		return av[:i], av[i+1:]
	}
	return "", av
}

// versionSet is what the versions of one resource share: the storage
// version and the converter. A resource served at one version has none.
type versionSet struct {
	// cache keeps recent conversions of stored objects; flight makes the
	// readers that miss one at the same time (the selectors of an event's
	// watchers, concurrent GETs) share one call to the converter.
	cache  convCache
	flight singleflight.Group
	// versions are the served versions, preferred (declared) first.
	versions          []string
	schemas           map[string]*schema.Props // by apiVersion
	storageVersion    string
	storageAPIVersion string // group/storageVersion
	conv              Converter
}

// convCache keeps the most recent conversions of stored objects, by key,
// revision and version: an object at one revision converts the same way
// every time, so a selector evaluated for each watcher of an event, or a
// LIST repeated, converts it once (a conversion webhook must be
// deterministic, as kube-apiserver requires). It holds at most
// convCacheSize entries, evicted oldest first.
type convCache struct {
	mu   sync.Mutex
	m    map[convKey][]byte
	ring []convKey
	next int
}

type convKey struct {
	key     string
	rev     uint64
	version string
}

const convCacheSize = 4096

func (c *convCache) get(k convKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[k]
	return b, ok
}

func (c *convCache) put(k convKey, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[convKey][]byte, convCacheSize)
		c.ring = make([]convKey, convCacheSize)
	}
	if _, ok := c.m[k]; ok {
		return
	}
	if old := c.ring[c.next]; old.key != "" {
		delete(c.m, old)
	}
	c.ring[c.next] = k
	c.next = (c.next + 1) % convCacheSize
	c.m[k] = b
}

// asServedObject is asServed for a stored object: conversions are cached
// by its key and revision.
func (rh *resourceHandler) asServedObject(ctx context.Context, o *storage.Object) ([]byte, error) {
	if o.Data == nil || rh.isServed(o.Data) {
		return o.Data, nil
	}
	k, ok := rh.cacheKey(o)
	if !ok {
		return rh.asServed(ctx, o.Data)
	}
	if b, ok := rh.versions.cache.get(k); ok {
		return b, nil
	}
	v, err, _ := rh.versions.flight.Do(k.key+"\x00"+strconv.FormatUint(k.rev, 10)+"\x00"+k.version, func() (any, error) {
		if b, ok := rh.versions.cache.get(k); ok { // converted since the miss
			return b, nil
		}
		b, err := rh.asServed(ctx, o.Data)
		if err == nil {
			rh.versions.cache.put(k, b)
		}
		return b, err
	})
	b, _ := v.([]byte)
	return b, err
}

// storedAt returns the apiVersion of stored bytes: read from the front
// when it is the first field (json.Marshal of a map puts it there), else
// found among the top-level fields.
func storedAt(data []byte) string {
	const head = `{"apiVersion":"`
	if bytes.HasPrefix(data, []byte(head)) {
		if end := bytes.IndexByte(data[len(head):], '"'); end >= 0 {
			return string(data[len(head) : len(head)+end])
		}
	}
	i := jsonscan.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return ""
	}
	for i = jsonscan.SkipSpace(data, i+1); i < len(data) && data[i] == '"'; {
		end := jsonscan.SkipString(data, i)
		if end < 0 {
			return ""
		}
		key := data[i+1 : end-1]
		i = jsonscan.SkipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return ""
		}
		i = jsonscan.SkipSpace(data, i+1)
		vEnd := jsonscan.SkipValue(data, i)
		if vEnd < 0 {
			return ""
		}
		if string(key) == "apiVersion" {
			var s string
			if json.Unmarshal(data[i:vEnd], &s) != nil {
				return ""
			}
			return s
		}
		i = jsonscan.SkipSpace(data, vEnd)
		if i < len(data) && data[i] == ',' {
			i = jsonscan.SkipSpace(data, i+1)
		}
	}
	return ""
}

// isServed says whether stored bytes are already at this version (always,
// for a resource of one version): one prefix comparison in the usual case.
func (rh *resourceHandler) isServed(data []byte) bool {
	return rh.versions == nil || bytes.HasPrefix(data, rh.servedPrefix) || storedAt(data) == rh.apiVersion
}

// cacheKey is the conversion cache's key of a stored object at this
// version; false for bytes that are not a stored revision.
func (rh *resourceHandler) cacheKey(o *storage.Object) (convKey, bool) {
	return convKey{o.Key, o.ResourceVersion, rh.Version}, o.Key != "" && o.ResourceVersion != 0
}

// asServed returns stored bytes at this handler's version: the bytes
// themselves when they are (the usual case, and always with one version),
// else decoded, converted and encoded again.
func (rh *resourceHandler) asServed(ctx context.Context, data []byte) ([]byte, error) {
	if data == nil || rh.isServed(data) {
		return data, nil
	}
	out, err := rh.convertData(ctx, [][]byte{data}, rh.apiVersion)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// asServedItems returns items at this handler's version, converting those
// that are not in one call of the converter (one ConversionReview for a
// list, as kube-apiserver sends). items is not modified.
func (rh *resourceHandler) asServedItems(ctx context.Context, items []storage.Object) ([]storage.Object, error) {
	if rh.versions == nil {
		return items, nil
	}
	var idx []int
	var data [][]byte
	var out []storage.Object
	for i := range items {
		if rh.isServed(items[i].Data) {
			continue
		}
		if out == nil {
			out = append([]storage.Object(nil), items...)
		}
		if k, ok := rh.cacheKey(&items[i]); ok {
			if b, ok := rh.versions.cache.get(k); ok {
				out[i].Data = b
				continue
			}
		}
		idx = append(idx, i)
		data = append(data, items[i].Data)
	}
	if out == nil {
		return items, nil
	}
	if len(idx) > 0 {
		conv, err := rh.convertData(ctx, data, rh.apiVersion)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			out[i].Data = conv[j]
			if k, ok := rh.cacheKey(&items[i]); ok {
				rh.versions.cache.put(k, conv[j])
			}
		}
	}
	return out, nil
}

// convertData decodes, converts and encodes stored objects.
func (rh *resourceHandler) convertData(ctx context.Context, data [][]byte, desired string) ([][]byte, error) {
	objs := make([]Object, len(data))
	for i, d := range data {
		obj, st := rh.decodeObject(d)
		if st != nil {
			return nil, meta.NewInternalError(errors.New(st.Message))
		}
		objs[i] = obj
	}
	if err := rh.convert(ctx, objs, desired); err != nil {
		return nil, err
	}
	out := make([][]byte, len(objs))
	for i, obj := range objs {
		b, err := marshalObject(obj)
		if err != nil {
			return nil, meta.NewInternalError(err)
		}
		out[i] = b
	}
	return out, nil
}

// convertObject returns a copy of obj at another version of the resource
// (attrs.Admission.Convert: admission rules written for another version).
func (rh *resourceHandler) convertObject(ctx context.Context, obj Object, version string) (Object, error) {
	desired := rh.Group + "/" + version
	if av, _ := obj["apiVersion"].(string); av == desired {
		return obj, nil
	}
	cp := deepCopyJSON(obj).(Object)
	if cp["apiVersion"] == nil || cp["apiVersion"] == "" {
		cp["apiVersion"] = rh.apiVersion // a body may leave it out
	}
	if cp["kind"] == nil || cp["kind"] == "" {
		cp["kind"] = rh.Kind
	}
	objs := []Object{cp}
	if err := rh.convert(ctx, objs, desired); err != nil {
		return nil, err
	}
	return objs[0], nil
}

// toStorage returns obj (at this handler's version) converted to the
// storage version; obj is not used afterwards.
func (rh *resourceHandler) toStorage(ctx context.Context, obj Object) (Object, error) {
	if rh.versions == nil || rh.apiVersion == rh.versions.storageAPIVersion {
		return obj, nil
	}
	objs := []Object{obj}
	if err := rh.convert(ctx, objs, rh.versions.storageAPIVersion); err != nil {
		return nil, err
	}
	return objs[0], nil
}

// convert runs the converter on objs (each at some other version than
// desired), then checks each result and restores its metadata as
// kube-apiserver does after a conversion webhook (everything from the
// original but labels and annotations), and prunes it with the desired
// version's schema.
func (rh *resourceHandler) convert(ctx context.Context, objs []Object, desired string) error {
	if rh.h.conversions != nil {
		rh.h.conversions.Add(int64(len(objs)))
	}
	type orig struct {
		gvk string
		md  Object
	}
	origs := make([]orig, len(objs))
	for i, obj := range objs {
		av, _ := obj["apiVersion"].(string)
		md, _ := deepCopyJSON(metadata(obj)).(Object)
		origs[i] = orig{gvk: av + ", Kind=" + rh.Kind, md: md}
	}
	fail := func(i int, format string, args ...any) error {
		return meta.NewInternalError(fmt.Errorf("conversion for %s failed: %s", origs[i].gvk, fmt.Sprintf(format, args...)))
	}
	if err := rh.versions.conv.Convert(ctx, objs, desired); err != nil {
		var st *meta.Status
		if errors.As(err, &st) {
			return st
		}
		return fail(0, "%v", err)
	}
	for i, obj := range objs {
		if obj == nil {
			return fail(i, "no object returned at index %d", i)
		}
		if av, _ := obj["apiVersion"].(string); av != desired {
			return fail(i, "invalid groupVersion (expected %s, received %s)", desired, av)
		}
		if k, _ := obj["kind"].(string); k != rh.Kind {
			return fail(i, "invalid kind (expected %s, received %s)", rh.Kind, k)
		}
		md, ok := obj["metadata"].(map[string]any)
		if !ok {
			return fail(i, "missing metadata in converted object")
		}
		for _, f := range []string{"name", "namespace", "uid"} {
			if e, a := str(origs[i].md, f), str(md, f); e != a {
				return fail(i, "must have the same %s: %v != %v", f, e, a)
			}
		}
		restored := origs[i].md
		for _, f := range []string{"labels", "annotations"} {
			if v, has := md[f]; has && v != nil {
				if _, ok := jsonStringMap(v); !ok {
					return fail(i, "invalid metadata.%s in converted object", f)
				}
				restored[f] = v
			} else {
				delete(restored, f)
			}
		}
		obj["metadata"] = restored
		// The converted object has the desired version's fields only, as
		// kube's schema-coercing converter prunes it (silently).
		if p := rh.versions.schemas[desired]; p != nil {
			schema.Prune(p, obj)
			schema.PruneNulls(p, obj)
		}
	}
	return nil
}

// deprecationWarning is kube's default warning for a deprecated version:
// "<group>/<version> <Kind> is deprecated", and "; use <group>/<version>
// <Kind>" naming the newest served version that is not deprecated and is
// newer than it, when there is one.
func deprecationWarning(r Resource, siblings []Resource) string {
	msg := r.Group + "/" + r.Version + " " + r.Kind + " is deprecated"
	best := ""
	for _, s := range siblings {
		if s.Deprecated || CompareVersions(r.Version, s.Version) >= 0 {
			continue
		}
		if best == "" || CompareVersions(s.Version, best) > 0 {
			best = s.Version
		}
	}
	if best != "" {
		msg += "; use " + r.Group + "/" + best + " " + r.Kind
	}
	return msg
}
