// This file holds the Feed: the store behind the watch of a computed
// resource (one that is not stored but computed on read, such as
// metrics-server's NodeMetrics). The program puts each object when it
// changes and removes those that go away; the Feed numbers the changes,
// keeps the current objects and serves List and Watch to a Cacher, which
// serves the clients' watches with bookmarks and WatchList as for a stored
// resource. An OnDemand (ondemand.go) makes a feed and its Cacher only while
// someone watches; its feeds are primed quietly (see Synced).

package watch

import (
	"bytes"
	"context"
	"hash/maphash"
	"strings"
	"sync"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// feedHistory is how many changes a Feed keeps for a watch that starts
// behind the newest (the Cacher's, between its list and its watch).
const feedHistory = 4096

// Feed is a read-only storage.Interface fed by Put and Remove: the changes
// of a computed resource. Create, Update and Delete through the interface
// are refused. Safe for concurrent use.
type Feed struct {
	group, resource string

	mu       sync.Mutex
	rev      uint64
	objects  map[string]feedObject
	history  []storage.Event // the last changes, oldest first
	watchers map[*feedWatcher]struct{}
	seed     maphash.Seed
	// quiet is set while an OnDemand session's feed is primed: Put and
	// Remove change the objects and record no event until Synced.
	quiet bool
	// floor is the revision Synced ended the priming at: nothing before it
	// can be replayed (a watch from further back is ErrExpired).
	floor uint64
	// closed is set when the OnDemand session ends: Put and Remove are
	// then no-ops.
	closed bool
	// synced is closed by the first Synced.
	synced     chan struct{}
	syncedOnce sync.Once
}

// feedObject is an object the feed holds and the hash of the JSON it was
// last put with (0: the JSON held a resourceVersion, see Put).
type feedObject struct {
	storage.Object
	sum uint64
}

var (
	_ storage.Interface      = (*Feed)(nil)
	_ storage.RevisionReader = (*Feed)(nil)
)

// NewFeed returns an empty feed for the objects of group and resource
// (their storage keys are storage.ObjectKey's).
func NewFeed(group, resource string) *Feed {
	return &Feed{group: group, resource: resource, objects: map[string]feedObject{}, watchers: map[*feedWatcher]struct{}{},
		seed: maphash.MakeSeed(), synced: make(chan struct{})}
}

// newQuietFeed returns an empty feed whose revisions continue after rev,
// recording no event until Synced: an OnDemand session's.
func newQuietFeed(group, resource string, rev uint64) *Feed {
	f := NewFeed(group, resource)
	f.rev, f.quiet = rev, true
	return f
}

// Synced tells the feed that every object that exists has been put. A
// feed that an OnDemand primes records no event before it (a watch starts
// from the state it holds then, and one from an earlier revision is
// ErrExpired), and the session's watches wait for it. A feed made by
// NewFeed needs no call: its watch cache lists it whenever it starts.
func (f *Feed) Synced() {
	f.mu.Lock()
	if f.quiet {
		f.quiet, f.floor = false, f.rev
	}
	f.mu.Unlock()
	f.syncedOnce.Do(func() { close(f.synced) })
}

// close ends an OnDemand session's feed: later Puts and Removes change
// nothing. It returns the feed's last revision, after which the next
// session's continue.
func (f *Feed) close() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return f.rev
}

// errReadOnly refuses writes through storage.Interface.
var errReadOnly = &storage.Error{Err: storage.ErrInvalidObject, Msg: "a computed resource is written through its feed only"}

// Put records data, an object's complete JSON, as its new state: ADDED when
// the feed did not hold it, MODIFIED when it changed, nothing when it is the
// state already held (metadata.resourceVersion aside).
func (f *Feed) Put(data []byte) error {
	m, err := backend.DecodeMeta(data)
	if err != nil {
		return err
	}
	if m.Name == "" {
		return &storage.Error{Err: storage.ErrInvalidObject, Msg: "metadata.name is required"}
	}
	key := storage.ObjectKey(f.group, f.resource, m.Namespace, m.Name)
	// A computed object is put again at every change of its source, most
	// often changed (a new sample): comparing its JSON with the held one
	// but for metadata.resourceVersion rewrites both. JSON with neither a
	// resourceVersion nor any whitespace (json.Marshal's) is its own
	// comparable form, so its hash tells a change at once; equal hashes,
	// and any other JSON, take the full comparison.
	var sum uint64
	if !bytes.Contains(data, []byte(`"resourceVersion"`)) && bytes.IndexAny(data, " \t\r\n") < 0 {
		sum = maphash.Bytes(f.seed, data) | 1 // never 0, which means "none"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	prev, had := f.objects[key]
	if had && (sum == 0 || prev.sum == 0 || sum == prev.sum) && sameState(prev.Data, data) {
		return nil
	}
	f.rev++
	out, err := backend.SetResourceVersion(data, f.rev)
	if err != nil {
		f.rev--
		return err
	}
	m.ResourceVersion = storage.FormatResourceVersion(f.rev)
	obj := storage.Object{Key: key, ResourceVersion: f.rev, Data: out, Meta: m}
	f.objects[key] = feedObject{obj, sum}
	if f.quiet {
		return nil
	}
	ev := storage.Event{Type: storage.EventAdded, Object: obj}
	if had {
		ev.Type, ev.Prev = storage.EventModified, &prev.Object
	}
	f.emit(ev)
	return nil
}

// Remove records that the object namespace/name is gone (nothing when the
// feed does not hold it).
func (f *Feed) Remove(namespace, name string) error {
	key := storage.ObjectKey(f.group, f.resource, namespace, name)
	f.mu.Lock()
	defer f.mu.Unlock()
	held, had := f.objects[key]
	if !had || f.closed {
		return nil
	}
	if f.quiet {
		delete(f.objects, key)
		return nil
	}
	prev := held.Object
	f.rev++
	out, err := backend.SetResourceVersion(prev.Data, f.rev)
	if err != nil {
		f.rev--
		return err
	}
	delete(f.objects, key)
	m := prev.Meta
	m.ResourceVersion = storage.FormatResourceVersion(f.rev)
	f.emit(storage.Event{Type: storage.EventDeleted, Object: storage.Object{Key: key, ResourceVersion: f.rev, Data: out, Meta: m}, Prev: &prev})
	return nil
}

// emit appends ev to the history and hands it to every watcher; f.mu is
// held.
func (f *Feed) emit(ev storage.Event) {
	f.history = append(f.history, ev)
	if len(f.history) > feedHistory {
		f.history = append(f.history[:0:0], f.history[len(f.history)-feedHistory/2:]...)
	}
	for w := range f.watchers {
		w.push(ev)
	}
}

// sameState reports whether a and b are the same object but for
// metadata.resourceVersion.
func sameState(a, b []byte) bool {
	na, err1 := backend.SetResourceVersion(a, 0)
	nb, err2 := backend.SetResourceVersion(b, 0)
	return err1 == nil && err2 == nil && bytes.Equal(na, nb)
}

// CurrentRevision is the revision of the last change.
func (f *Feed) CurrentRevision(context.Context) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rev, nil
}

// Get returns the object under key.
func (f *Feed) Get(_ context.Context, key string, _ storage.GetOptions) (storage.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[key]
	if !ok {
		return storage.Object{}, &storage.Error{Err: storage.ErrNotFound, Key: key}
	}
	return o.Object, nil
}

// List returns every object under prefix at the current revision; paging
// and resource versions are not served (the Cacher lists once, whole).
func (f *Feed) List(_ context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	res := storage.ListResult{ResourceVersion: f.rev}
	for k, fo := range f.objects {
		if o := fo.Object; strings.HasPrefix(k, prefix) && (opts.Predicate == nil || opts.Predicate.Matches(&o)) {
			res.Items = append(res.Items, o)
		}
	}
	return res, nil
}

// Create is refused: the feed is written by Put.
func (f *Feed) Create(context.Context, string, []byte) (storage.Object, error) {
	return storage.Object{}, errReadOnly
}

// Update is refused: the feed is written by Put.
func (f *Feed) Update(context.Context, string, storage.UpdateOptions, storage.UpdateFunc) (storage.Object, error) {
	return storage.Object{}, errReadOnly
}

// Delete is refused: the feed is written by Remove.
func (f *Feed) Delete(context.Context, string, storage.DeleteOptions) (storage.Object, error) {
	return storage.Object{}, errReadOnly
}

// Watch streams the changes after opts.ResourceVersion ("" or "0": from
// now) under key; a revision older than the history kept, or than the end
// of a quiet feed's priming, is ErrExpired.
func (f *Feed) Watch(ctx context.Context, key string, opts storage.WatchOptions) (storage.Watcher, error) {
	rv, err := backend.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	from := rv.Revision
	f.mu.Lock()
	defer f.mu.Unlock()
	if from == 0 {
		from = f.rev
	}
	if from < f.floor {
		return nil, &storage.Error{Err: storage.ErrExpired, ResourceVersion: f.floor}
	}
	if len(f.history) > 0 && from+1 < f.history[0].Object.ResourceVersion {
		return nil, &storage.Error{Err: storage.ErrExpired, ResourceVersion: f.history[0].Object.ResourceVersion - 1}
	}
	w := &feedWatcher{f: f, ch: make(chan storage.Event), wake: make(chan struct{}, 1), done: make(chan struct{}),
		match: func(ev storage.Event) bool {
			if opts.Recursive {
				return strings.HasPrefix(ev.Object.Key, key)
			}
			return ev.Object.Key == key
		}}
	for _, ev := range f.history {
		if ev.Object.ResourceVersion > from {
			w.push(ev)
		}
	}
	f.watchers[w] = struct{}{}
	go w.run(ctx)
	return w, nil
}

// feedWatcher is one watch: an unbounded queue drained into ch.
type feedWatcher struct {
	f     *Feed
	match func(storage.Event) bool
	ch    chan storage.Event
	wake  chan struct{}
	done  chan struct{}
	once  sync.Once

	qmu   sync.Mutex
	queue []storage.Event
}

func (w *feedWatcher) push(ev storage.Event) {
	if !w.match(ev) {
		return
	}
	w.qmu.Lock()
	w.queue = append(w.queue, ev)
	w.qmu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *feedWatcher) run(ctx context.Context) {
	defer close(w.ch)
	defer w.detach()
	for {
		w.qmu.Lock()
		q := w.queue
		w.queue = nil
		w.qmu.Unlock()
		for _, ev := range q {
			select {
			case w.ch <- ev:
			case <-ctx.Done():
				return
			case <-w.done:
				return
			}
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			return
		case <-w.done:
			return
		}
	}
}

func (w *feedWatcher) detach() {
	w.f.mu.Lock()
	delete(w.f.watchers, w)
	w.f.mu.Unlock()
}

// ResultChan delivers the events.
func (w *feedWatcher) ResultChan() <-chan storage.Event { return w.ch }

// Stop ends the watch.
func (w *feedWatcher) Stop() { w.once.Do(func() { close(w.done) }) }
