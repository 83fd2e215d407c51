// This file holds the store: an in-memory ring of the last batches a Source
// produced, and the NodeMetrics and PodMetrics computed from it on read, as
// metrics-server's storage does (rate of the cumulative CPU counter between
// the two newest samples, newest working set). Nothing is stored on disk.

package main

import (
	"context"
	"errors"
	"math"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/rest"
)

const apiVersion = "metrics.k8s.io/v1beta1"

// ringSize is how many batches the store keeps: two give a rate; a third
// lets a reader still use the previous pair while a scrape lands.
const ringSize = 3

// Store scrapes a Source every Resolution and serves metrics computed from
// the batches it keeps. It is safe for concurrent use.
type Store struct {
	src        Source
	resolution time.Duration
	log        *zap.Logger
	now        func() time.Time

	// mu guards ring, next and added.
	mu   sync.RWMutex
	ring [ringSize]*indexedBatch
	next int
	// added is closed when the next batch is added (watchers wait on it).
	added chan struct{}
}

type indexedBatch struct {
	nodes map[string]*NodeSample
	pods  map[string]*PodSample // namespace/name
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
	return &Store{src: src, resolution: resolution, log: log, now: time.Now, added: make(chan struct{})}
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

// scrape adds one batch to the ring; a failed scrape is logged and skipped.
func (s *Store) scrape(ctx context.Context) {
	b, err := s.src.Scrape(ctx)
	if err != nil {
		s.log.Warn("scrape failed", zap.Error(err))
		return
	}
	s.Add(b)
}

// Add puts a batch in the ring, replacing the oldest.
func (s *Store) Add(b *Batch) {
	ib := &indexedBatch{nodes: map[string]*NodeSample{}, pods: map[string]*PodSample{}}
	for i := range b.Nodes {
		ib.nodes[b.Nodes[i].Name] = &b.Nodes[i]
	}
	for i := range b.Pods {
		ib.pods[b.Pods[i].Namespace+"/"+b.Pods[i].Name] = &b.Pods[i]
	}
	s.mu.Lock()
	s.ring[s.next] = ib
	s.next = (s.next + 1) % ringSize
	close(s.added)
	s.added = make(chan struct{})
	s.mu.Unlock()
}

// nextBatch is closed when the next batch is added.
func (s *Store) nextBatch() <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.added
}

// follow calls emit after every batch added, until ctx ends, for a watch of
// the metrics computed from it.
func follow(ctx context.Context, s *Store, emit func() error) error {
	for {
		next := s.nextBatch()
		if err := emit(); err != nil {
			s.log.Warn("emitting metrics events failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-next:
		}
	}
}

// NodeChanges puts every node's metrics after each scrape (a new sample is
// a change) and removes the nodes that have none any more.
func (s *Store) NodeChanges(ctx context.Context, put func(*NodeMetrics) error, remove func(namespace, name string) error) error {
	return changes(ctx, s, func() []NodeMetrics { l, _ := s.NodeList(ctx, "", rest.ListOptions{}); return l },
		func(m *NodeMetrics) [2]string { return [2]string{"", m.Name} }, put, remove)
}

// PodChanges puts every pod's metrics after each scrape and removes the
// pods that have none any more.
func (s *Store) PodChanges(ctx context.Context, put func(*PodMetrics) error, remove func(namespace, name string) error) error {
	return changes(ctx, s, func() []PodMetrics { l, _ := s.PodList(ctx, "", rest.ListOptions{}); return l },
		func(m *PodMetrics) [2]string { return [2]string{m.Namespace, m.Name} }, put, remove)
}

// changes puts every object of list after each batch and removes those
// (namespace, name) it no longer holds.
func changes[T any](ctx context.Context, s *Store, list func() []T, id func(*T) [2]string, put func(*T) error, remove func(namespace, name string) error) error {
	had := map[[2]string]bool{}
	return follow(ctx, s, func() error {
		items := list()
		have := make(map[[2]string]bool, len(items))
		var errs []error
		for i := range items {
			have[id(&items[i])] = true
			errs = append(errs, put(&items[i]))
		}
		for k := range had {
			if !have[k] {
				errs = append(errs, remove(k[0], k[1]))
			}
		}
		had = have
		return errors.Join(errs...)
	})
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
	cur, prev := s.pair()
	if cur == nil || prev == nil {
		return errNoMetrics
	}
	for name, c := range cur.nodes {
		if p := prev.nodes[name]; p != nil {
			if _, _, ok := rate(c.Usage, p.Usage); ok {
				return nil
			}
		}
	}
	for key := range cur.pods {
		if s.pod(cur, prev, key) != nil {
			return nil
		}
	}
	return errNoMetrics
}

// pair returns the newest batch and the one before it (either may be nil).
func (s *Store) pair() (cur, prev *indexedBatch) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	cur = s.ring[(s.next+ringSize-1)%ringSize]
	prev = s.ring[(s.next+ringSize-2)%ringSize]
	return cur, prev
}

// rate is the CPU usage in nanocores between two samples, the window
// between them, and whether they make a valid pair (time moved forward, the
// counter did not reset).
func rate(cur, prev Usage) (int64, time.Duration, bool) {
	window := cur.Time.Sub(prev.Time)
	if window <= 0 || cur.CPUNanoseconds < prev.CPUNanoseconds {
		return 0, 0, false
	}
	return int64(math.Round(float64(cur.CPUNanoseconds-prev.CPUNanoseconds) * 1e9 / float64(window.Nanoseconds()))), window, true
}

// The objects of metrics.k8s.io/v1beta1 (wire.md §8.3), as Go types: the
// typed layer derives their schema and fills in kind and apiVersion.
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

func usageList(nanocores int64, memory uint64) ResourceList {
	return ResourceList{"cpu": formatCPU(nanocores), "memory": formatMemory(int64(memory))}
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// node computes one node's metrics, or nil when it has no pair of samples.
func (s *Store) node(cur, prev *indexedBatch, name string) *NodeMetrics {
	if cur == nil || prev == nil || cur.nodes[name] == nil || prev.nodes[name] == nil {
		return nil
	}
	c, p := cur.nodes[name], prev.nodes[name]
	cpu, window, ok := rate(c.Usage, p.Usage)
	if !ok {
		return nil
	}
	return &NodeMetrics{
		ObjectMeta: meta.ObjectMeta{Name: name, CreationTimestamp: meta.Time{Time: s.now()}, Labels: c.Labels},
		Timestamp:  rfc3339(c.Usage.Time), Window: window.Round(time.Millisecond).String(),
		Usage: usageList(cpu, c.Usage.MemoryBytes),
	}
}

// pod computes one pod's metrics, or nil unless every container has a
// pair of samples (metrics-server drops partial pods too).
func (s *Store) pod(cur, prev *indexedBatch, key string) *PodMetrics {
	if cur == nil || prev == nil || cur.pods[key] == nil || prev.pods[key] == nil {
		return nil
	}
	c, p := cur.pods[key], prev.pods[key]
	before := map[string]Usage{}
	for _, ct := range p.Containers {
		before[ct.Name] = ct.Usage
	}
	pm := &PodMetrics{ObjectMeta: meta.ObjectMeta{Name: c.Name, Namespace: c.Namespace, CreationTimestamp: meta.Time{Time: s.now()}, Labels: c.Labels},
		Containers: []ContainerMetrics{}}
	var newest time.Time
	var window time.Duration
	for _, ct := range c.Containers {
		pu, ok := before[ct.Name]
		if !ok {
			return nil
		}
		cpu, w, ok := rate(ct.Usage, pu)
		if !ok {
			return nil
		}
		if ct.Usage.Time.After(newest) {
			newest, window = ct.Usage.Time, w
		}
		pm.Containers = append(pm.Containers, ContainerMetrics{Name: ct.Name, Usage: usageList(cpu, ct.Usage.MemoryBytes)})
	}
	pm.Timestamp, pm.Window = rfc3339(newest), window.Round(time.Millisecond).String()
	return pm
}

// Node is the metrics of the node name; nil when it has none yet (404).
func (s *Store) Node(_ context.Context, _, name string) (*NodeMetrics, error) {
	cur, prev := s.pair()
	return s.node(cur, prev, name), nil
}

// NodeList is the metrics of every node the selector matches, by name.
func (s *Store) NodeList(_ context.Context, _ string, opts rest.ListOptions) ([]NodeMetrics, error) {
	cur, prev := s.pair()
	if cur == nil {
		return nil, nil
	}
	names := make([]string, 0, len(cur.nodes))
	for n, ns := range cur.nodes {
		if opts.Labels.Matches(ns.Labels) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []NodeMetrics
	for _, n := range names {
		if m := s.node(cur, prev, n); m != nil {
			out = append(out, *m)
		}
	}
	return out, nil
}

// Pod is the metrics of the pod namespace/name; nil when it has none yet
// (404).
func (s *Store) Pod(_ context.Context, namespace, name string) (*PodMetrics, error) {
	cur, prev := s.pair()
	return s.pod(cur, prev, namespace+"/"+name), nil
}

// PodList is the metrics of the pods of namespace ("" for all) the selector
// matches, by namespace and name.
func (s *Store) PodList(_ context.Context, namespace string, opts rest.ListOptions) ([]PodMetrics, error) {
	cur, prev := s.pair()
	if cur == nil {
		return nil, nil
	}
	keys := make([]string, 0, len(cur.pods))
	for k, p := range cur.pods {
		if (namespace == "" || p.Namespace == namespace) && opts.Labels.Matches(p.Labels) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []PodMetrics
	for _, k := range keys {
		if m := s.pod(cur, prev, k); m != nil {
			out = append(out, *m)
		}
	}
	return out, nil
}
