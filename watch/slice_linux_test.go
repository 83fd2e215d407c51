package watch

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestScanTurnShortSlice checks that a scan's thread runs its turn on the
// shortest slice and gets its own back when the turn ends (Linux 6.12 and
// later report a fair thread's slice through sched_getattr).
func TestScanTurnShortSlice(t *testing.T) {
	prior, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if prior.Runtime == 0 {
		t.Skip("this kernel reports no time slice for fair threads (before Linux 6.12)")
	}
	w := scan{s: NewScans(1)}
	for range yieldEvery {
		w.visit() // the first yieldEvery objects are free, then a turn
	}
	if !w.held {
		t.Fatal("no turn taken after yieldEvery objects")
	}
	tid := unix.Gettid() // the turn locked the goroutine to this thread
	during, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if during.Runtime != scanSlice {
		t.Errorf("slice during the turn: %d ns, want %d", during.Runtime, scanSlice)
	}
	w.pause()
	after, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if after.Runtime != prior.Runtime || after.Policy != prior.Policy || after.Nice != prior.Nice {
		t.Errorf("thread after the turn: slice %d policy %d nice %d, want %d %d %d", after.Runtime, after.Policy, after.Nice, prior.Runtime, prior.Policy, prior.Nice)
	}
}
