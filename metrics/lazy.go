// This file holds Lazy, a series of a metric vector looked up once.

package metrics

import "sync"

// Lazy is one series of a metric vector (a Counter, Gauge or Observer),
// looked up in the vector on its first use rather than on every change: a
// vector's lookup hashes the label values and takes the vector's lock, and
// a series every request changes pays that each time. The series still
// appears when first changed, as with WithLabelValues each time. The zero
// value is ready; safe for concurrent use.
type Lazy[T any] struct {
	once sync.Once
	v    T
}

// Get returns the series, calling lookup (the vector's WithLabelValues) on
// the first call only.
func (l *Lazy[T]) Get(lookup func() T) T {
	l.once.Do(func() { l.v = lookup() })
	return l.v
}
