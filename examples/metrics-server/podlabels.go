// This file holds the labels of every pod of the cluster as the kubelet
// source keeps them between scrapes: each distinct label set once, shared
// by every pod that carries it (a workload's replicas carry the same
// labels), and each namespace's name once, shared by its pods' keys.
// Decoded as they come from the pods informer, 30,000 pods' labels were
// two strings and a slice each, megabytes held for the life of the server
// to say a few dozen distinct things.

package main

import (
	"encoding/binary"
	"sort"
)

// minInternCompact is the least number of interned label sets and
// namespaces at which podLabels drops the ones no pod holds any more.
const minInternCompact = 1024

// podLabels are the pods' labels by namespace and name. Not safe for
// concurrent use: Kubelets.mu guards it.
type podLabels struct {
	byPod map[podKey]Labels
	// sets are the label sets held, by their encoding (labelsKey), whose
	// bytes the set's strings are cut from; namespaces are the
	// namespaces' names. A set or a namespace no pod holds any more stays
	// until the next compaction, when the two together reach compactAt.
	sets       map[string]Labels
	namespaces map[string]string
	compactAt  int
	buf        []byte // a set's encoding, to look it up
	ends       []int
}

func newPodLabels(pods int) *podLabels {
	return &podLabels{byPod: make(map[podKey]Labels, pods), sets: map[string]Labels{}, namespaces: map[string]string{}, compactAt: minInternCompact}
}

// get is the labels of the pod key (nil for none or an unknown pod).
func (p *podLabels) get(key podKey) Labels { return p.byPod[key] }

// namespace is the namespace ns as the pods' keys hold it, or ns when no
// pod of it is known.
func (p *podLabels) namespace(ns string) string {
	if s, ok := p.namespaces[ns]; ok {
		return s
	}
	return ns
}

// set records the pod key's labels, the map decoded from its metadata.
func (p *podLabels) set(key podKey, labels map[string]string) {
	ns, ok := p.namespaces[key.namespace]
	if !ok {
		ns = key.namespace
		p.namespaces[ns] = ns
	}
	key.namespace = ns
	p.byPod[key] = p.intern(labels)
	if len(p.sets)+len(p.namespaces) >= p.compactAt {
		p.compact()
	}
}

// delete forgets the pod key.
func (p *podLabels) delete(key podKey) { delete(p.byPod, key) }

// intern is m as Labels, the same slice for every equal m.
func (p *podLabels) intern(m map[string]string) Labels {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// The encoding: each key and value after its length, so that no two
	// sets have the same one. ends are where each string ends in it.
	p.buf, p.ends = p.buf[:0], p.ends[:0]
	for _, k := range keys {
		for _, s := range [2]string{k, m[k]} {
			p.buf = binary.AppendUvarint(p.buf, uint64(len(s)))
			p.buf = append(p.buf, s...)
			p.ends = append(p.ends, len(p.buf))
		}
	}
	if l, ok := p.sets[string(p.buf)]; ok {
		return l
	}
	// The set's strings are cut from its key: one allocation for them all.
	enc := string(p.buf)
	l := make(Labels, len(p.ends))
	start := 0
	for i, end := range p.ends {
		_, w := binary.Uvarint(p.buf[start:])
		l[i] = enc[start+w : end]
		start = end
	}
	p.sets[enc] = l
	return l
}

// compact keeps only the label sets and namespaces some pod holds.
func (p *podLabels) compact() {
	held := make(map[*string]bool, len(p.sets)) // a set by its first string
	namespaces := make(map[string]string, len(p.namespaces))
	for key, l := range p.byPod {
		namespaces[key.namespace] = key.namespace
		if len(l) > 0 {
			held[&l[0]] = true
		}
	}
	sets := make(map[string]Labels, len(held))
	for enc, l := range p.sets {
		if held[&l[0]] {
			sets[enc] = l
		}
	}
	p.sets, p.namespaces = sets, namespaces
	p.compactAt = max(2*(len(sets)+len(namespaces)), minInternCompact)
}
