// This file holds the labels of every pod of the cluster as the kubelet
// source keeps them between scrapes: by the pod's "namespace/name" (one
// string a pod, the map's key), each distinct label set once, shared by
// every pod that carries it (a workload's replicas carry the same labels).
// Decoded as they come from the pods informer, 30,000 pods' labels were a
// map of two strings to a slice, two strings and a slice each: megabytes
// held for the life of the server to say a few dozen distinct things.

package main

import (
	"encoding/binary"
	"maps"
	"slices"
)

// minInternCompact is the least number of interned label sets at which
// podLabels drops the ones no pod holds any more.
const minInternCompact = 1024

// podLabels are the pods' labels by namespace and name. Not safe for
// concurrent use: Kubelets.mu guards it.
type podLabels struct {
	byPod map[string]*Labels // by podRef; nil for a pod without labels
	// sets are the label sets held, by their encoding, whose bytes the
	// set's strings are cut from. A set no pod holds any more stays until
	// the next compaction, when there are compactAt.
	sets      map[string]*Labels
	compactAt int
	buf       []byte // a set's encoding, to look it up
	ends      []int
}

func newPodLabels() *podLabels {
	return &podLabels{byPod: map[string]*Labels{}, sets: map[string]*Labels{}, compactAt: minInternCompact}
}

// appendPodRef appends a pod's key in podLabels: "namespace/name" (neither
// holds a "/").
func appendPodRef(b []byte, namespace, name string) []byte {
	return append(append(append(b, namespace...), '/'), name...)
}

// get is the labels of the pod whose appendPodRef is ref (nil for none or
// an unknown pod).
func (p *podLabels) get(ref []byte) Labels {
	if l := p.byPod[string(ref)]; l != nil {
		return *l
	}
	return nil
}

// set records the labels of the pod namespace/name, the map decoded from
// its metadata.
func (p *podLabels) set(namespace, name string, labels map[string]string) {
	p.byPod[namespace+"/"+name] = p.intern(labels)
	if len(p.sets) >= p.compactAt {
		p.compact()
	}
}

// delete forgets the pod namespace/name.
func (p *podLabels) delete(namespace, name string) { delete(p.byPod, namespace+"/"+name) }

// intern is m as Labels, the same for every equal m (nil for none).
func (p *podLabels) intern(m map[string]string) *Labels {
	if len(m) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(m))
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
	p.sets[enc] = &l
	return &l
}

// compact keeps only the label sets some pod holds.
func (p *podLabels) compact() {
	held := make(map[*Labels]bool, len(p.sets))
	for _, l := range p.byPod {
		held[l] = true
	}
	sets := make(map[string]*Labels, len(held))
	for enc, l := range p.sets {
		if held[l] {
			sets[enc] = l
		}
	}
	p.sets = sets
	p.compactAt = max(2*len(sets), minInternCompact)
}
