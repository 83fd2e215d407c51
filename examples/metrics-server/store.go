// This file holds the store: an in-memory ring of the last batches a Source
// produced, and the NodeMetrics and PodMetrics computed from it on read, as
// metrics-server's storage does (rate of the cumulative CPU counter between
// the two newest samples, newest working set). Nothing is stored on disk.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
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

	// mu guards ring and next.
	mu   sync.RWMutex
	ring [ringSize]*indexedBatch
	next int
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
	return &Store{src: src, resolution: resolution, log: log, now: time.Now}
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
	s.mu.Unlock()
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
		if s.podJSON(cur, prev, key) != nil {
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

// The wire shapes of metrics.k8s.io/v1beta1 (wire.md §8.3).
type (
	objectMeta struct {
		Name              string            `json:"name"`
		Namespace         string            `json:"namespace,omitempty"`
		CreationTimestamp string            `json:"creationTimestamp"`
		Labels            map[string]string `json:"labels,omitempty"`
	}
	resourceList map[string]string
	nodeMetrics  struct {
		Kind       string       `json:"kind"`
		APIVersion string       `json:"apiVersion"`
		Metadata   objectMeta   `json:"metadata"`
		Timestamp  string       `json:"timestamp"`
		Window     string       `json:"window"`
		Usage      resourceList `json:"usage"`
	}
	containerMetrics struct {
		Name  string       `json:"name"`
		Usage resourceList `json:"usage"`
	}
	podMetrics struct {
		Kind       string             `json:"kind"`
		APIVersion string             `json:"apiVersion"`
		Metadata   objectMeta         `json:"metadata"`
		Timestamp  string             `json:"timestamp"`
		Window     string             `json:"window"`
		Containers []containerMetrics `json:"containers"`
	}
)

func usageList(nanocores int64, memory uint64) resourceList {
	return resourceList{"cpu": formatCPU(nanocores), "memory": formatMemory(int64(memory))}
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// nodeJSON computes one node's metrics, or nil when it has no pair of samples.
func (s *Store) nodeJSON(cur, prev *indexedBatch, name string) []byte {
	if cur == nil || prev == nil || cur.nodes[name] == nil || prev.nodes[name] == nil {
		return nil
	}
	c, p := cur.nodes[name], prev.nodes[name]
	cpu, window, ok := rate(c.Usage, p.Usage)
	if !ok {
		return nil
	}
	b, _ := json.Marshal(nodeMetrics{
		Kind: "NodeMetrics", APIVersion: apiVersion,
		Metadata:  objectMeta{Name: name, CreationTimestamp: rfc3339(s.now()), Labels: c.Labels},
		Timestamp: rfc3339(c.Usage.Time), Window: window.Round(time.Millisecond).String(),
		Usage: usageList(cpu, c.Usage.MemoryBytes),
	})
	return b
}

// podJSON computes one pod's metrics, or nil unless every container has a
// pair of samples (metrics-server drops partial pods too).
func (s *Store) podJSON(cur, prev *indexedBatch, key string) []byte {
	if cur == nil || prev == nil || cur.pods[key] == nil || prev.pods[key] == nil {
		return nil
	}
	c, p := cur.pods[key], prev.pods[key]
	before := map[string]Usage{}
	for _, ct := range p.Containers {
		before[ct.Name] = ct.Usage
	}
	pm := podMetrics{Kind: "PodMetrics", APIVersion: apiVersion,
		Metadata:   objectMeta{Name: c.Name, Namespace: c.Namespace, CreationTimestamp: rfc3339(s.now()), Labels: c.Labels},
		Containers: []containerMetrics{}}
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
		pm.Containers = append(pm.Containers, containerMetrics{Name: ct.Name, Usage: usageList(cpu, ct.Usage.MemoryBytes)})
	}
	pm.Timestamp, pm.Window = rfc3339(newest), window.Round(time.Millisecond).String()
	b, _ := json.Marshal(pm)
	return b
}

// notFound is the error of a get for an object without metrics.
func notFound(what string) error { return fmt.Errorf("%s: %w", what, storage.ErrNotFound) }

// Nodes is the Getter and Lister of NodeMetrics.
func (s *Store) Nodes() (rest.Getter, rest.Lister) {
	get := rest.GetterFunc(func(_ context.Context, _, name string) ([]byte, error) {
		cur, prev := s.pair()
		if b := s.nodeJSON(cur, prev, name); b != nil {
			return b, nil
		}
		return nil, notFound("node " + name)
	})
	list := rest.ListerFunc(func(_ context.Context, _ string, opts rest.ListOptions) ([][]byte, error) {
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
		var out [][]byte
		for _, n := range names {
			if b := s.nodeJSON(cur, prev, n); b != nil {
				out = append(out, b)
			}
		}
		return out, nil
	})
	return get, list
}

// Pods is the Getter and Lister of PodMetrics.
func (s *Store) Pods() (rest.Getter, rest.Lister) {
	get := rest.GetterFunc(func(_ context.Context, namespace, name string) ([]byte, error) {
		cur, prev := s.pair()
		if b := s.podJSON(cur, prev, namespace+"/"+name); b != nil {
			return b, nil
		}
		return nil, notFound("pod " + namespace + "/" + name)
	})
	list := rest.ListerFunc(func(_ context.Context, namespace string, opts rest.ListOptions) ([][]byte, error) {
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
		var out [][]byte
		for _, k := range keys {
			if b := s.podJSON(cur, prev, k); b != nil {
				out = append(out, b)
			}
		}
		return out, nil
	})
	return get, list
}
