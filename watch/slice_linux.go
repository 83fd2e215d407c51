// This file holds a long scan's short time slices on Linux.

package watch

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// scanSlice is the time slice a scan's thread asks the kernel for while it
// holds a turn: the shortest EEVDF takes (its floor is 0.1 ms).
const scanSlice = 100_000 // ns

// politeThread is a thread a scan made polite, and how to undo it.
type politeThread struct {
	locked bool
	prior  unix.SchedAttr
}

// polite locks the calling goroutine to its thread and asks the kernel
// (Linux 6.12 and later; older kernels ignore it) for short time slices on
// that thread: a thread that wakes on the scan's core (a GET's connection
// read, its client, another process) then runs within 0.1 ms instead of
// waiting out the scan's slice (1.5 ms by default on two cores; under a
// flood, a bystander's slowest GETs waited about 4 ms so). The thread keeps its share of the
// core: only the wait of others shortens. Threads under another policy
// (real time, idle, deadline) are left alone; so is every thread when the
// kernel refuses.
func polite() politeThread {
	runtime.LockOSThread()
	t := politeThread{locked: true}
	var prior unix.SchedAttr
	if getAttr(&prior) != nil || (prior.Policy != unix.SCHED_NORMAL && prior.Policy != unix.SCHED_BATCH) {
		return t
	}
	short := prior
	short.Runtime = scanSlice
	if setAttr(&short) != nil {
		return t
	}
	t.prior = prior
	return t
}

// getAttr and setAttr are sched_getattr and sched_setattr of the calling
// thread, on the caller's struct (x/sys/unix's allocate one per call).
func getAttr(a *unix.SchedAttr) error {
	if _, _, e := unix.RawSyscall6(unix.SYS_SCHED_GETATTR, 0, uintptr(unsafe.Pointer(a)), unix.SizeofSchedAttr, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

func setAttr(a *unix.SchedAttr) error {
	a.Size = unix.SizeofSchedAttr
	if _, _, e := unix.RawSyscall(unix.SYS_SCHED_SETATTR, 0, uintptr(unsafe.Pointer(a)), 0); e != 0 {
		return e
	}
	return nil
}

// restore gives the thread its slice back and unlocks it. When the kernel
// refuses that, the thread stays locked to the goroutine, which ends it when
// it exits: no other goroutine ever runs on a thread left short.
func (t *politeThread) restore() {
	if !t.locked {
		return
	}
	if t.prior.Size != 0 && setAttr(&t.prior) != nil {
		t.locked = false
		return
	}
	t.locked = false
	runtime.UnlockOSThread()
}
