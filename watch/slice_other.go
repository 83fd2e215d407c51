//go:build !linux

// This file holds a long scan's time slices where the kernel has no say.

package watch

// politeThread is nothing where threads' slices cannot be shortened.
type politeThread struct{}

// polite does nothing off Linux.
func polite() politeThread { return politeThread{} }

// restore does nothing off Linux.
func (*politeThread) restore() {}
