// This file holds the store: what the last two batches a Source produced
// say, as metrics-server's storage computes it (rate of the cumulative CPU
// counter between the two newest samples, newest working set), computed
// once per batch into an immutable snapshot that requests and the watch
// feed read without copying. Nothing is stored on disk.

package main

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/rest"
)

const apiVersion = "metrics.k8s.io/v1beta1"

// Store scrapes a Source every Resolution and serves metrics computed from
// the two newest batches. It is safe for concurrent use.
type Store struct {
	src        Source
	resolution time.Duration
	log        *zap.Logger
	now        func() time.Time

	// addMu serialises Add: each snapshot is computed from the one before.
	addMu sync.Mutex
	// mu guards snap and added.
	mu   sync.RWMutex
	snap *snapshot
	// added is closed when the next batch is added (watchers wait on it).
	added chan struct{}
}

// snapshot is what one batch and the one before it say; it is never
// changed once published.
type snapshot struct {
	batches int       // how many batches the store had taken
	at      time.Time // when it was computed: its objects' creationTimestamp in the watch
	nodes   map[string]*nodeEntry
	// pods are sorted by namespace and name: a pod is found by a binary
	// search and a list needs no sort. A map of 30,000 pods took more
	// memory than their entries.
	pods []podEntry
	// cpu is every pod's containers' usage in nanocores, each pod's at its
	// cpuAt, in the order of its containers.
	cpu []int64
	// served counts the nodes and pods with metrics (a valid pair).
	served int
}

type podKey struct{ namespace, name string }

// nodeEntry is a node's newest sample and, when ok, its usage between the
// sample before and it.
type nodeEntry struct {
	name   string
	labels Labels
	cur    Usage
	cpu    int64 // nanocores
	window time.Duration
	ok     bool
}

// podEntry is a pod's containers' newest samples (the batch's own, taken
// over rather than copied: a copy was megabytes a resolution) and, when ok
// (every container has a valid pair, as metrics-server drops partial
// pods), their usage: memory in the samples, CPU in the snapshot's cpu
// from cpuAt. window is the newest container's (time).
type podEntry struct {
	namespace, name string
	labels          Labels
	containers      []ContainerSample
	window          time.Duration
	cpuAt           int32
	ok              bool
}

// time is when the pod's newest container was sampled (the first such).
func (p *podEntry) time() time.Time {
	var t time.Time
	for _, c := range p.containers {
		if c.Usage.Time.After(t) {
			t = c.Usage.Time
		}
	}
	return t
}

// cpu is the pod's containers' usage in nanocores (from snap.cpu).
func (p *podEntry) cpu(snap *snapshot) []int64 {
	return snap.cpu[p.cpuAt : int(p.cpuAt)+len(p.containers)]
}

// NewStore returns a store over src. resolution zero means 15s (as
// metrics-server's --metric-resolution); log nil means no logging.
func NewStore(src Source, resolution time.Duration, log *zap.Logger) *Store {
	if resolution <= 0 {
		resolution = 15 * time.Second
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Store{src: src, resolution: resolution, log: log, now: time.Now, added: make(chan struct{}),
		snap: &snapshot{nodes: map[string]*nodeEntry{}}}
}

// Start scrapes now, again after a second (so metrics exist soon after start
// rather than one resolution later), then every resolution, until ctx ends.
func (s *Store) Start(ctx context.Context) error {
	s.scrape(ctx)
	first := time.NewTimer(min(time.Second, s.resolution))
	defer first.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-first.C:
		s.scrape(ctx)
	}
	t := time.NewTicker(s.resolution)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.scrape(ctx)
		}
	}
}

// scrape adds one batch; a failed scrape is logged and skipped.
func (s *Store) scrape(ctx context.Context) {
	b, err := s.src.Scrape(ctx)
	if err != nil {
		s.log.Warn("scrape failed", zap.Error(err))
		return
	}
	s.Add(b)
}

// Add computes the snapshot of b and the batch before it and publishes it.
// A node or pod of b that the batch before lacked (or whose counter reset,
// or whose time did not move) has no metrics until the next batch; one
// that b lacks is gone. The snapshot keeps b's pods' containers: they must
// not change after.
func (s *Store) Add(b *Batch) {
	s.addMu.Lock()
	defer s.addMu.Unlock()
	prev := s.snapshot()
	next := &snapshot{batches: prev.batches + 1, at: s.now(), nodes: make(map[string]*nodeEntry, len(b.Nodes))}
	entries := make([]nodeEntry, len(b.Nodes)) // one allocation for every node
	for i := range b.Nodes {
		n, e := &b.Nodes[i], &entries[i]
		*e = nodeEntry{name: n.Name, labels: n.Labels, cur: n.Usage}
		if p := prev.nodes[n.Name]; p != nil {
			e.cpu, e.window, e.ok = rate(n.Usage, p.cur)
		}
		if e.ok {
			next.served++
		}
		next.nodes[n.Name] = e
	}
	// The batch's pods in key order (a pod reported twice: the last), each
	// matched with the same pod of the snapshot before by a merge.
	order := podOrder(b.Pods)
	n := 0
	for i := range b.Pods {
		n += len(b.Pods[i].Containers)
	}
	next.cpu = make([]int64, n) // one allocation for every container
	next.pods = make([]podEntry, 0, len(b.Pods))
	cpuAt := 0
	before := prev.pods
	for k, o := range order {
		p := &b.Pods[o.i]
		if k+1 < len(order) && order[k+1].ns == o.ns && order[k+1].name == o.name {
			continue
		}
		for len(before) > 0 && before[0].compare(p.Namespace, p.Name) < 0 {
			before = before[1:]
		}
		var prevPod *podEntry
		if len(before) > 0 && before[0].compare(p.Namespace, p.Name) == 0 {
			prevPod = &before[0]
		}
		e := podEntry{namespace: p.Namespace, name: p.Name, labels: p.Labels, containers: p.Containers, cpuAt: int32(cpuAt)}
		cpu := next.cpu[cpuAt : cpuAt+len(p.Containers)]
		cpuAt += len(p.Containers)
		e.ok = prevPod != nil && len(p.Containers) > 0
		var newest time.Time
		for j, c := range p.Containers {
			if !e.ok {
				break
			}
			var window time.Duration
			cpu[j], window, e.ok = rate(c.Usage, prevPod.container(c.Name))
			if e.ok && c.Usage.Time.After(newest) {
				newest, e.window = c.Usage.Time, window
			}
		}
		if e.ok {
			next.served++
		}
		next.pods = append(next.pods, e)
	}
	s.mu.Lock()
	s.snap = next
	close(s.added)
	s.added = make(chan struct{})
	s.mu.Unlock()
}

// podKeyOrder is a pod of a batch as it is sorted: its namespace's rank
// among the batch's namespaces, its name, and its index in the batch.
type podKeyOrder struct {
	name  string
	ns, i int32
}

// podOrder is pods sorted by namespace, then name, then index. A batch has
// few namespaces and many pods: each namespace is ranked once, and a pod's
// comparison is of two integers and, within a namespace, of names. (A
// stable sort of indexes comparing both strings took ~30 ms of every
// resolution at 30,000 pods.)
func podOrder(pods []PodSample) []podKeyOrder {
	rank := map[string]int32{}
	var namespaces []string
	for i := range pods {
		if _, ok := rank[pods[i].Namespace]; !ok {
			rank[pods[i].Namespace] = 0
			namespaces = append(namespaces, pods[i].Namespace)
		}
	}
	slices.Sort(namespaces)
	for r, ns := range namespaces {
		rank[ns] = int32(r)
	}
	order := make([]podKeyOrder, len(pods))
	last, lastRank := "", int32(0) // a kubelet's answer groups its pods' namespaces
	for i := range pods {
		ns := pods[i].Namespace
		if i == 0 || ns != last {
			last, lastRank = ns, rank[ns]
		}
		order[i] = podKeyOrder{name: pods[i].Name, ns: lastRank, i: int32(i)}
	}
	slices.SortFunc(order, func(a, b podKeyOrder) int {
		if a.ns != b.ns {
			return cmp.Compare(a.ns, b.ns)
		}
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	return order
}

// compare orders p against the pod namespace/name.
func (p *podEntry) compare(namespace, name string) int {
	if c := strings.Compare(p.namespace, namespace); c != 0 {
		return c
	}
	return strings.Compare(p.name, name)
}

// pod is the entry of the pod namespace/name, or nil.
func (s *snapshot) pod(namespace, name string) *podEntry {
	i, found := slices.BinarySearchFunc(s.pods, podKey{namespace, name}, func(e podEntry, k podKey) int { return e.compare(k.namespace, k.name) })
	if !found {
		return nil
	}
	return &s.pods[i]
}

// container is the newest sample of the container name (zero when the pod
// has none: no valid pair with it).
func (p *podEntry) container(name string) Usage {
	for _, c := range p.containers {
		if c.Name == name {
			return c.Usage
		}
	}
	return Usage{}
}

// snapshot is the current snapshot.
func (s *Store) snapshot() *snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.snap
}

// nextBatch is closed when the next batch is added.
func (s *Store) nextBatch() <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.added
}

// storeCheckName is the Store's readiness check, named as metrics-server's.
const storeCheckName = "metric-storage-ready"

// errNoMetrics is Ready's error, metrics-server's words.
var errNoMetrics = errors.New("no metrics to serve")

// Ready reports whether the store can serve metrics: at least one node or
// pod has a valid pair of samples in the two newest batches, as
// metrics-server's storage is ready once it holds a full window for one of
// them. Two batches are not enough: scrapes that found no node (a source
// that does not know the nodes yet, kubelets unreachable) or a counter that
// reset give lists of no items.
func (s *Store) Ready(context.Context) error {
	if s.snapshot().served == 0 {
		return errNoMetrics
	}
	return nil
}

// rate is the CPU usage in nanocores between two samples, the window
// between them, and whether they make a valid pair (time moved forward, the
// counter did not reset). The rate is truncated to whole nanocores, as
// metrics-server truncates it: kubectl top rounds each container's
// quantity up to a millicore and sums them, so a pod whose containers each
// read a fraction of a nanocore high would show 1m more than metrics-server
// shows for it.
func rate(cur, prev Usage) (int64, time.Duration, bool) {
	window := cur.Time.Sub(prev.Time)
	if prev.Time.IsZero() || window <= 0 || cur.CPUNanoseconds < prev.CPUNanoseconds {
		return 0, 0, false
	}
	return int64(float64(cur.CPUNanoseconds-prev.CPUNanoseconds) * 1e9 / float64(window.Nanoseconds())), window, true
}

// The objects of metrics.k8s.io/v1beta1 (wire.md §8.3), as Go types: their
// schema is derived from them (typed.SchemaOf), and tests decode the JSON
// the store writes (json.go) into them.
type (
	// NodeMetrics is the usage of one node.
	NodeMetrics struct {
		meta.ObjectMeta `json:"metadata"`
		Timestamp       string       `json:"timestamp" doc:"When the usage was measured (RFC 3339), the end of the window."`
		Window          string       `json:"window" doc:"Interval the usage was measured over."`
		Usage           ResourceList `json:"usage" doc:"Resource usage: cpu in cores, memory in bytes, as quantities."`
	}
	// PodMetrics is the usage of one pod's containers.
	PodMetrics struct {
		meta.ObjectMeta `json:"metadata"`
		Timestamp       string             `json:"timestamp" doc:"When the usage was measured (RFC 3339), the end of the window."`
		Window          string             `json:"window" doc:"Interval the usage was measured over."`
		Containers      []ContainerMetrics `json:"containers" doc:"Usage of each container."`
	}
	// ContainerMetrics is the usage of one container.
	ContainerMetrics struct {
		Name  string       `json:"name"`
		Usage ResourceList `json:"usage"`
	}
	// ResourceList maps a resource name (cpu, memory) to a quantity.
	ResourceList map[string]string
)

// windowString is how a window is written: rounded to the millisecond.
func windowString(d time.Duration) string { return d.Round(time.Millisecond).String() }

// Node is the JSON of the node name's metrics; NotFound when it has none
// yet.
func (s *Store) Node(_ context.Context, _, name string) ([]byte, error) {
	e := s.snapshot().nodes[name]
	if e == nil || !e.ok {
		return nil, rest.NotFound("", name)
	}
	return appendNodeJSON(nil, e, s.now()), nil
}

// NodeList is the JSON of the metrics of every node the selector matches,
// by name.
func (s *Store) NodeList(_ context.Context, _ string, opts rest.ListOptions) ([][]byte, error) {
	snap, now := s.snapshot(), s.now()
	names := make([]string, 0, len(snap.nodes))
	for n, e := range snap.nodes {
		if e.ok && opts.Labels.MatchesSet(e.labels) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := make([][]byte, len(names))
	for i, n := range names {
		out[i] = appendNodeJSON(nil, snap.nodes[n], now)
	}
	return out, nil
}

// Pod is the JSON of the pod namespace/name's metrics; NotFound when it has
// none yet.
func (s *Store) Pod(_ context.Context, namespace, name string) ([]byte, error) {
	snap := s.snapshot()
	e := snap.pod(namespace, name)
	if e == nil || !e.ok {
		return nil, rest.NotFound(namespace, name)
	}
	return appendPodJSON(nil, e, e.cpu(snap), s.now()), nil
}

// PodList is the JSON of the metrics of the pods of namespace ("" for all)
// the selector matches, by namespace and name (the snapshot's order).
func (s *Store) PodList(_ context.Context, namespace string, opts rest.ListOptions) ([][]byte, error) {
	snap, now := s.snapshot(), s.now()
	pods := snap.pods
	if namespace != "" {
		lo, _ := slices.BinarySearchFunc(pods, namespace, func(e podEntry, ns string) int { return strings.Compare(e.namespace, ns) })
		hi := lo
		for hi < len(pods) && pods[hi].namespace == namespace {
			hi++
		}
		pods = pods[lo:hi]
	}
	var out [][]byte
	for i := range pods {
		if e := &pods[i]; e.ok && opts.Labels.MatchesSet(e.labels) {
			out = append(out, appendPodJSON(nil, e, e.cpu(snap), now))
		}
	}
	return out, nil
}

// NodeEvents puts every node's metrics after each batch (a new sample is a
// change; the objects are created when the batch was added, so that the
// same batch put again is no change) and removes the nodes that have none
// any more, until ctx ends.
func (s *Store) NodeEvents(ctx context.Context, sink rest.EventSink) error {
	put := map[string]uint64{} // node -> the batch it was last put at
	size := 256
	return follow(ctx, s, sink, func(snap *snapshot) error {
		var errs []error
		for name, e := range snap.nodes {
			if !e.ok {
				continue
			}
			put[name] = uint64(snap.batches)
			data := appendNodeJSON(make([]byte, 0, size), e, snap.at)
			size = len(data)
			if err := sink.Put(data); err != nil {
				errs = append(errs, err)
			}
		}
		for name, at := range put {
			if at != uint64(snap.batches) {
				delete(put, name)
				if err := sink.Remove("", name); err != nil {
					errs = append(errs, err)
				}
			}
		}
		return errors.Join(errs...)
	})
}

// PodEvents puts every pod's metrics after each batch and removes the pods
// that have none any more, until ctx ends.
func (s *Store) PodEvents(ctx context.Context, sink rest.EventSink) error {
	put := map[podKey]uint64{}
	size := 256
	return follow(ctx, s, sink, func(snap *snapshot) error {
		var errs []error
		for i := range snap.pods {
			e := &snap.pods[i]
			if !e.ok {
				continue
			}
			put[podKey{e.namespace, e.name}] = uint64(snap.batches)
			data := appendPodJSON(make([]byte, 0, size), e, e.cpu(snap), snap.at)
			size = len(data)
			if err := sink.Put(data); err != nil {
				errs = append(errs, err)
			}
		}
		for key, at := range put {
			if at != uint64(snap.batches) {
				delete(put, key)
				if err := sink.Remove(key.namespace, key.name); err != nil {
					errs = append(errs, err)
				}
			}
		}
		return errors.Join(errs...)
	})
}

// follow calls emit with the current snapshot (then tells sink it has the
// state), then again after every batch added, until ctx ends: the events
// of a watch of the metrics. The library runs it only while someone
// watches.
func follow(ctx context.Context, s *Store, sink rest.EventSink, emit func(*snapshot) error) error {
	for synced := false; ; synced = true {
		next := s.nextBatch()
		if err := emit(s.snapshot()); err != nil {
			s.log.Warn("emitting metrics events failed", zap.Error(err))
		}
		if !synced {
			sink.Synced()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-next:
		}
	}
}
