// This file holds Labels, an object's metadata.labels in the compact form
// the watch cache keeps for every object.

package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"iter"
	"slices"
	"strings"

	"github.com/annexapi/annex/meta"
)

// Labels are an object's metadata.labels, immutable. They are one string
// (each key and value preceded by its length, keys sorted) rather than a map:
// a Go map of two labels takes about 300 bytes, as much as a third of a small
// object, and the watch cache holds one per object. The zero value has no
// labels. Labels decode from and encode to a JSON object.
type Labels struct {
	enc string
	// bits are the labels' meta.LabelBits, so that a selector rejects most
	// objects that do not match without reading enc (the object's entry
	// holds bits; enc's bytes lie elsewhere in memory).
	bits uint64
}

// LabelBits returns the labels' meta.LabelBits (zero when there are none).
func (l Labels) LabelBits() uint64 { return l.bits }

// MakeLabels returns the labels of m.
func MakeLabels(m map[string]string) Labels {
	kv := make([][]byte, 0, 2*len(m))
	for k, v := range m {
		kv = append(kv, []byte(k), []byte(v))
	}
	return LabelsFromPairs(kv)
}

// LabelsFromPairs returns the labels of kv, keys and values alternating, in
// any order; of duplicate keys the last wins, as when decoding JSON into a
// map.
func LabelsFromPairs(kv [][]byte) Labels {
	type pair struct{ k, v []byte }
	var buf [32]pair
	ps := buf[:0]
	n := 0
	for i := 0; i+1 < len(kv); i += 2 {
		ps = append(ps, pair{kv[i], kv[i+1]})
		n += len(kv[i]) + len(kv[i+1]) + 2*binary.MaxVarintLen64
	}
	if len(ps) == 0 {
		return Labels{}
	}
	slices.SortStableFunc(ps, func(a, b pair) int { return bytes.Compare(a.k, b.k) })
	var encBuf [256]byte
	b := encBuf[:0]
	if n > len(encBuf) {
		b = make([]byte, 0, n)
	}
	for i, p := range ps {
		if i+1 < len(ps) && bytes.Equal(ps[i+1].k, p.k) {
			continue // a later duplicate wins
		}
		b = binary.AppendUvarint(b, uint64(len(p.k)))
		b = append(b, p.k...)
		b = binary.AppendUvarint(b, uint64(len(p.v)))
		b = append(b, p.v...)
	}
	l := Labels{enc: string(b)}
	for k, v := range l.All() {
		l.bits |= meta.LabelKeyBit(k) | meta.LabelPairBit(k, v)
	}
	return l
}

// All yields the labels in key order.
func (l Labels) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for s := l.enc; s != ""; {
			var k, v string
			k, s = next(s)
			v, s = next(s)
			if !yield(k, v) {
				return
			}
		}
	}
}

// next splits the length-prefixed string at the front of s (as MakeLabels
// writes it) from the rest.
func next(s string) (string, string) {
	if c := s[0]; c < 0x80 { // a length under 128: one byte
		s = s[1:]
		return s[:c], s[c:]
	}
	var n, shift uint
	i := 0
	for ; ; i++ {
		c := s[i]
		n |= uint(c&0x7f) << shift
		if c < 0x80 {
			break
		}
		shift += 7
	}
	s = s[i+1:]
	return s[:n], s[n:]
}

// Lookup returns the value of key and whether the labels have it.
//
// A selector's LIST looks up its keys in every object it walks, so this is
// a plain loop over the encoding (no iterator, whose closure the compiler
// does not inline here): it took about half of a LIST with a selector that
// matches nothing over 50,000 objects.
func (l Labels) Lookup(key string) (string, bool) {
	for s := l.enc; s != ""; {
		var k, v string
		k, s = next(s)
		v, s = next(s)
		if k == key {
			return v, true
		}
		if k > key {
			break
		}
	}
	return "", false
}

// Get returns the value of key, "" when the labels do not have it.
func (l Labels) Get(key string) string {
	v, _ := l.Lookup(key)
	return v
}

// Len is the number of labels.
func (l Labels) Len() int {
	n := 0
	for range l.All() {
		n++
	}
	return n
}

// Map returns the labels as a new map (nil when there are none).
func (l Labels) Map() map[string]string {
	if l.enc == "" {
		return nil
	}
	m := map[string]string{}
	for k, v := range l.All() {
		m[k] = v
	}
	return m
}

// String is the labels as fmt prints a map: map[k:v k:v].
func (l Labels) String() string {
	var b strings.Builder
	b.WriteString("map[")
	for k, v := range l.All() {
		if b.Len() > len("map[") {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte(':')
		b.WriteString(v)
	}
	b.WriteByte(']')
	return b.String()
}

// MarshalJSON encodes the labels as a JSON object with sorted keys (null
// when there are none), as encoding/json encodes a map.
func (l Labels) MarshalJSON() ([]byte, error) {
	return json.Marshal(l.Map())
}

// UnmarshalJSON decodes a JSON object of strings; null leaves l unchanged, as
// for a map.
func (l *Labels) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if m != nil {
		*l = MakeLabels(m)
	}
	return nil
}
