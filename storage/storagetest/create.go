// This file holds the Create and Get cases.

package storagetest

import (
	"bytes"
	"time"

	"github.com/annexapi/annex/storage"
)

func createCases() []testCase {
	return []testCase{
		{name: "sets_resource_version_uid_and_timestamp", run: func(e *env) {
			a := e.create(key("ns", "a"), obj("ns", "a", "1"))
			if a.Meta.UID == "" {
				e.t.Error("metadata.uid not set")
			}
			if _, err := time.Parse(time.RFC3339, a.Meta.CreationTimestamp); err != nil {
				e.t.Errorf("metadata.creationTimestamp %q is not RFC 3339: %v", a.Meta.CreationTimestamp, err)
			}
			if got := value(e.t, a); got != "1" {
				e.t.Errorf("spec.value = %q, want 1", got)
			}
			b := e.create(key("ns", "b"), obj("ns", "b", "1"))
			if a.Meta.UID == b.Meta.UID {
				e.t.Errorf("two objects share uid %q", a.Meta.UID)
			}
			got := e.get(key("ns", "a"), "")
			if !bytes.Equal(got.Data, a.Data) {
				e.t.Errorf("Get returned\n%s\nCreate returned\n%s", got.Data, a.Data)
			}
		}},
		{name: "keeps_given_uid_and_timestamp", run: func(e *env) {
			w := decode(e.t, obj("ns", "a", "1"))
			w.Metadata.UID = "6f1c8b2e-0000-4000-8000-000000000001"
			w.Metadata.CreationTimestamp = "2020-01-02T03:04:05Z"
			a := e.create(key("ns", "a"), mustJSON(e.t, w))
			if a.Meta.UID != w.Metadata.UID || a.Meta.CreationTimestamp != w.Metadata.CreationTimestamp {
				e.t.Errorf("uid, creationTimestamp = %q, %q; want the given %q, %q",
					a.Meta.UID, a.Meta.CreationTimestamp, w.Metadata.UID, w.Metadata.CreationTimestamp)
			}
		}},
		{name: "resource_version_set_on_input", run: func(e *env) {
			w := decode(e.t, obj("ns", "a", "1"))
			w.Metadata.ResourceVersion = "5"
			_, err := e.s.Create(e.ctx, key("ns", "a"), mustJSON(e.t, w))
			storageError(e.t, err, storage.ErrResourceVersionSetOnCreate)
			_, err = e.s.Get(e.ctx, key("ns", "a"), storage.GetOptions{})
			storageError(e.t, err, storage.ErrNotFound)
		}},
		{name: "existing_key", run: func(e *env) {
			a := e.create(key("ns", "a"), obj("ns", "a", "1"))
			_, err := e.s.Create(e.ctx, key("ns", "a"), obj("ns", "a", "2"))
			storageError(e.t, err, storage.ErrAlreadyExists)
			got := e.get(key("ns", "a"), "")
			if got.ResourceVersion != a.ResourceVersion || value(e.t, got) != "1" {
				e.t.Errorf("after a failed Create the object is %s value %q, want %s value 1", describe(got), value(e.t, got), describe(a))
			}
		}},
		{name: "invalid_key", run: func(e *env) {
			for _, k := range []string{"", "/", "widgets", "/a/", "/a//b", "/a/./b", "/a/../b", "/a/b/.."} {
				_, err := e.s.Create(e.ctx, k, obj("ns", "a", "1"))
				storageError(e.t, err, storage.ErrInvalidKey)
			}
		}},
		{name: "invalid_object", run: func(e *env) {
			for _, data := range []string{``, `not json`, `[1,2]`, `"a string"`, `null`, `{"metadata":"x"}`, `{"metadata":{"name":1}}`, `{"a":1`} {
				_, err := e.s.Create(e.ctx, key("ns", "a"), []byte(data))
				if err == nil {
					e.t.Errorf("Create(%q) succeeded", data)
					continue
				}
				storageError(e.t, err, storage.ErrInvalidObject)
			}
			_, err := e.s.Get(e.ctx, key("ns", "a"), storage.GetOptions{})
			storageError(e.t, err, storage.ErrNotFound)
		}},
		{name: "revisions_increase", run: func(e *env) {
			// e.create checks each revision is after the previous one.
			for _, n := range []string{"c", "a", "b"} {
				e.create(key("ns", n), obj("ns", n, "1"))
			}
		}},
	}
}

func getCases() []testCase {
	// setup creates a (value 1 at c1) then updates it (value 2 at u1).
	setup := func(e *env) (created, updated storage.Object) {
		created = e.create(key("ns", "a"), obj("ns", "a", "1"))
		updated = e.update(key("ns", "a"), "2")
		return created, updated
	}
	return []testCase{
		{name: "latest", run: func(e *env) {
			_, u := setup(e)
			got := e.get(key("ns", "a"), "")
			if got.ResourceVersion != u.ResourceVersion || value(e.t, got) != "2" {
				e.t.Errorf("Get(rv \"\") = %s value %q, want %s value 2", describe(got), value(e.t, got), describe(u))
			}
		}},
		{name: "resource_version_zero", run: func(e *env) {
			c, u := setup(e)
			// "0" is any state the store has: the creation or the update.
			got := e.get(key("ns", "a"), "0")
			switch {
			case got.ResourceVersion == c.ResourceVersion && value(e.t, got) == "1":
			case got.ResourceVersion == u.ResourceVersion && value(e.t, got) == "2":
			default:
				e.t.Errorf("Get(rv 0) = %s value %q, a state the object never had", describe(got), value(e.t, got))
			}
		}},
		{name: "creation_resource_version", run: func(e *env) {
			c, u := setup(e)
			// Not older than the creation: the update is the only newer state.
			got := e.get(key("ns", "a"), rvs(c.ResourceVersion))
			switch {
			case got.ResourceVersion == c.ResourceVersion && value(e.t, got) == "1":
			case got.ResourceVersion == u.ResourceVersion && value(e.t, got) == "2":
			default:
				e.t.Errorf("Get(rv %d) = %s value %q, a state the object never had", c.ResourceVersion, describe(got), value(e.t, got))
			}
		}},
		{name: "current_resource_version", private: true, run: func(e *env) {
			_, u := setup(e)
			got := e.get(key("ns", "a"), rvs(e.current()))
			if got.ResourceVersion != u.ResourceVersion || value(e.t, got) != "2" {
				e.t.Errorf("Get(rv current) = %s, want %s", describe(got), describe(u))
			}
		}},
		{name: "too_large_resource_version", private: true, run: func(e *env) {
			setup(e)
			cur := e.current()
			for _, rv := range []string{rvs(cur + 1), rvs(cur + 1000)} {
				_, err := e.s.Get(e.ctx, key("ns", "a"), storage.GetOptions{ResourceVersion: rv})
				se := storageError(e.t, err, storage.ErrTooLargeResourceVersion)
				if se == nil || se.ResourceVersion != cur {
					e.t.Errorf("Get(rv %s): error %#v does not carry the current revision %d", rv, se, cur)
				}
			}
		}},
		{name: "not_found", private: true, run: func(e *env) {
			e.create(key("ns", "b"), obj("ns", "b", "1"))
			for _, rv := range []string{"", "0", rvs(e.current())} {
				_, err := e.s.Get(e.ctx, key("ns", "a"), storage.GetOptions{ResourceVersion: rv})
				storageError(e.t, err, storage.ErrNotFound)
			}
			// A key that is a prefix of an existing key is not that key.
			_, err := e.s.Get(e.ctx, prefix("ns"), storage.GetOptions{})
			storageError(e.t, err, storage.ErrNotFound)
		}},
		{name: "deleted", private: true, run: func(e *env) {
			setup(e)
			e.delete(key("ns", "a"))
			for _, rv := range []string{"", rvs(e.current())} {
				_, err := e.s.Get(e.ctx, key("ns", "a"), storage.GetOptions{ResourceVersion: rv})
				storageError(e.t, err, storage.ErrNotFound)
			}
		}},
		{name: "invalid_resource_version", run: func(e *env) {
			setup(e)
			for _, rv := range []string{"abc", "-1", "1.5", " 1", "0x10"} {
				_, err := e.s.Get(e.ctx, key("ns", "a"), storage.GetOptions{ResourceVersion: rv})
				storageError(e.t, err, storage.ErrInvalidResourceVersion)
			}
		}},
		{name: "invalid_key", run: func(e *env) {
			for _, k := range []string{"", "widgets", "/a/", "/a//b", "/a/../b"} {
				_, err := e.s.Get(e.ctx, k, storage.GetOptions{})
				storageError(e.t, err, storage.ErrInvalidKey)
			}
		}},
	}
}
