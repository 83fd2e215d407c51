// This file holds where samples come from: the Source interface a scraper
// implements, and the simulated source the example ships (nodes and pods
// from flags or a file, with plausible, slowly changing usage).
//
// A real scraper plugs in as metrics-server's does: every resolution it asks
// each kubelet for /metrics/resource (Prometheus text: node_cpu_usage_seconds_total,
// node_memory_working_set_bytes, container_cpu_usage_seconds_total,
// container_memory_working_set_bytes, each with its own timestamp), and
// returns them as one Batch: cumulative CPU time and working-set memory per
// node and per container. The store turns two consecutive batches into
// rates; the scraper never computes usage itself.

package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/annexapi/annex/meta"
)

// Source produces a batch of samples each time it is scraped. Scrape is
// called from one goroutine at a time, every metric resolution.
type Source interface {
	Scrape(ctx context.Context) (*Batch, error)
}

// SourceFunc adapts a function to a Source.
type SourceFunc func(ctx context.Context) (*Batch, error)

// Scrape calls f.
func (f SourceFunc) Scrape(ctx context.Context) (*Batch, error) { return f(ctx) }

var (
	_ Source = SourceFunc(nil)
	_ Source = (*Simulated)(nil)
)

// Batch is one scrape of every node and pod.
type Batch struct {
	Nodes []NodeSample
	Pods  []PodSample
}

// NodeSample is one node's counters at Time.
type NodeSample struct {
	Name   string
	Labels Labels
	Usage  Usage
}

// PodSample is one pod's containers' counters.
type PodSample struct {
	Namespace, Name string
	Labels          Labels
	Containers      []ContainerSample
}

// Labels are an object's labels as key, value pairs sorted by key: kept for
// every pod of the cluster, they take a fraction of a map's memory, and
// are written in order without sorting. A meta.LabelSet.
type Labels []string

// LabelsOf returns m as Labels (nil for none).
func LabelsOf(m map[string]string) Labels {
	if len(m) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(m))
	l := make(Labels, 0, 2*len(keys))
	for _, k := range keys {
		l = append(l, k, m[k])
	}
	return l
}

// Lookup returns the value of the label key.
func (l Labels) Lookup(key string) (string, bool) {
	for i := 0; i+1 < len(l); i += 2 {
		if l[i] == key {
			return l[i+1], true
		}
	}
	return "", false
}

var _ meta.LabelSet = Labels(nil)

// ContainerSample is one container's counters.
type ContainerSample struct {
	Name  string
	Usage Usage
}

// Usage is what a kubelet reports for a node or a container.
type Usage struct {
	// Time is when the counters were read.
	Time time.Time
	// CPUNanoseconds is the cumulative CPU time used, in core-nanoseconds.
	CPUNanoseconds uint64
	// MemoryBytes is the working set.
	MemoryBytes uint64
}

// Spec declares the simulated cluster: the nodes and pods and their mean
// usage. Quantities use Kubernetes spellings ("500m", "2Gi").
type Spec struct {
	Nodes []NodeSpec `yaml:"nodes"`
	Pods  []PodSpec  `yaml:"pods"`
	// Variation is how far usage swings around its mean, as a fraction
	// (0.2 is ±20%). Zero keeps usage constant (tests use it).
	Variation float64 `yaml:"variation"`
}

// NodeSpec is one simulated node.
type NodeSpec struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
	CPU    string            `yaml:"cpu"`
	Memory string            `yaml:"memory"`
}

// PodSpec is one simulated pod.
type PodSpec struct {
	Namespace  string            `yaml:"namespace"`
	Name       string            `yaml:"name"`
	Labels     map[string]string `yaml:"labels"`
	Containers []ContainerSpec   `yaml:"containers"`
}

// ContainerSpec is one simulated container.
type ContainerSpec struct {
	Name   string `yaml:"name"`
	CPU    string `yaml:"cpu"`
	Memory string `yaml:"memory"`
}

// errSpec is returned for an invalid simulation spec.
var errSpec = errors.New("invalid simulation spec")

// LoadSpec reads a Spec from a YAML or JSON file.
func LoadSpec(path string) (Spec, error) {
	var s Spec
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%w: %s: %v", errSpec, path, err)
	}
	return s, nil
}

// SpecFromNames builds a Spec from --nodes and --pods values: node names, and
// pods as namespace/name, each pod with one container "app".
func SpecFromNames(nodes, pods []string, variation float64) (Spec, error) {
	s := Spec{Variation: variation}
	for i, n := range nodes {
		s.Nodes = append(s.Nodes, NodeSpec{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n},
			CPU: strconv.Itoa(150+100*i) + "m", Memory: strconv.Itoa(1536+512*i) + "Mi"})
	}
	for i, p := range pods {
		ns, name, ok := strings.Cut(p, "/")
		if !ok || ns == "" || name == "" {
			return s, fmt.Errorf("%w: pod %q is not namespace/name", errSpec, p)
		}
		app := name
		if j := strings.LastIndexByte(name, '-'); j > 0 {
			app = name[:j]
		}
		s.Pods = append(s.Pods, PodSpec{Namespace: ns, Name: name, Labels: map[string]string{"app": app},
			Containers: []ContainerSpec{{Name: "app", CPU: strconv.Itoa(2+3*i) + "m", Memory: strconv.Itoa(12+4*i) + "Mi"}}})
	}
	return s, nil
}

// Simulated is a Source of made-up usage for the nodes and pods of a Spec:
// each value swings around its mean on a slow sine wave, CPU is integrated
// into a cumulative counter as a kubelet's is, and memory is rounded to 4 KiB
// pages.
type Simulated struct {
	spec  Spec
	now   func() time.Time
	start time.Time

	// mu guards the counters (Scrape is called by one goroutine, tests may
	// call it from another).
	mu       sync.Mutex
	last     time.Time
	counters map[string]float64 // node name or ns/pod/container → CPU core-ns
	means    map[string][2]float64
}

// NewSimulated checks spec and returns its source. now nil means time.Now.
func NewSimulated(spec Spec, now func() time.Time) (*Simulated, error) {
	if now == nil {
		now = time.Now
	}
	s := &Simulated{spec: spec, now: now, counters: map[string]float64{}, means: map[string][2]float64{}}
	add := func(key, cpu, mem string) error {
		c, err := parseCPU(cpu)
		if err != nil {
			return fmt.Errorf("%w: %s cpu: %v", errSpec, key, err)
		}
		m, err := parseMemory(mem)
		if err != nil {
			return fmt.Errorf("%w: %s memory: %v", errSpec, key, err)
		}
		if _, dup := s.means[key]; dup {
			return fmt.Errorf("%w: %s declared twice", errSpec, key)
		}
		s.means[key] = [2]float64{c, m}
		return nil
	}
	for _, n := range spec.Nodes {
		if err := add(n.Name, n.CPU, n.Memory); err != nil {
			return nil, err
		}
	}
	for _, p := range spec.Pods {
		if p.Namespace == "" || p.Name == "" {
			return nil, fmt.Errorf("%w: a pod needs a namespace and a name", errSpec)
		}
		for _, c := range p.Containers {
			if err := add(p.Namespace+"/"+p.Name+"/"+c.Name, c.CPU, c.Memory); err != nil {
				return nil, err
			}
		}
	}
	if spec.Variation < 0 || spec.Variation >= 1 {
		return nil, fmt.Errorf("%w: variation %v is outside [0, 1)", errSpec, spec.Variation)
	}
	return s, nil
}

// level is the swing factor of key at t: 1 ± variation, a different phase per key.
func (s *Simulated) level(key string, t time.Time) float64 {
	if s.spec.Variation == 0 {
		return 1
	}
	phase := 0.0
	for _, c := range key {
		phase += float64(c)
	}
	return 1 + s.spec.Variation*math.Sin(2*math.Pi*t.Sub(s.start).Seconds()/300+phase)
}

// usage advances key's counter to now and returns its sample.
func (s *Simulated) usage(key string, now time.Time, dtMillis float64) Usage {
	mean := s.means[key]
	l := s.level(key, now)
	// Whole core-ns per step, over whole milliseconds: a constant usage
	// gives exact rates (250m stays 250m, not 249999999n).
	s.counters[key] += math.Round(mean[0] * 1e9 * l * dtMillis / 1e3)
	mem := math.Round(mean[1]*l/4096) * 4096
	if s.spec.Variation == 0 {
		mem = mean[1]
	}
	return Usage{Time: now, CPUNanoseconds: uint64(math.Round(s.counters[key])), MemoryBytes: uint64(mem)}
}

// Scrape returns the counters now.
func (s *Simulated) Scrape(context.Context) (*Batch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().Truncate(time.Millisecond)
	if s.start.IsZero() {
		// Counters start as if the machines had been up an hour.
		s.start, s.last = now, now.Add(-time.Hour)
	}
	dt := float64(now.Sub(s.last).Milliseconds()) // whole milliseconds
	s.last = now
	b := &Batch{}
	for _, n := range s.spec.Nodes {
		b.Nodes = append(b.Nodes, NodeSample{Name: n.Name, Labels: LabelsOf(n.Labels), Usage: s.usage(n.Name, now, dt)})
	}
	for _, p := range s.spec.Pods {
		ps := PodSample{Namespace: p.Namespace, Name: p.Name, Labels: LabelsOf(p.Labels)}
		for _, c := range p.Containers {
			ps.Containers = append(ps.Containers, ContainerSample{Name: c.Name, Usage: s.usage(p.Namespace+"/"+p.Name+"/"+c.Name, now, dt)})
		}
		b.Pods = append(b.Pods, ps)
	}
	return b, nil
}

// parseCPU parses a CPU quantity ("250m", "1.5", "100000n") into cores.
func parseCPU(q string) (float64, error) {
	return parseQuantity(q, map[string]float64{"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1, "k": 1e3})
}

// parseMemory parses a memory quantity ("12Mi", "1G", "4096") into bytes.
func parseMemory(q string) (float64, error) {
	return parseQuantity(q, map[string]float64{"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
		"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40})
}

func parseQuantity(q string, suffixes map[string]float64) (float64, error) {
	i := len(q)
	for i > 0 && (q[i-1] < '0' || q[i-1] > '9') {
		i--
	}
	mult, ok := suffixes[q[i:]]
	if !ok || i == 0 {
		return 0, fmt.Errorf("quantity %q: unknown suffix or no number", q)
	}
	n, err := strconv.ParseFloat(q[:i], 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("quantity %q: not a non-negative number", q)
	}
	return n * mult, nil
}
