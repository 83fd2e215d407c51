package stack

import (
	"runtime"
	"testing"
)

// depth recurses n times with a 1 KiB frame each, so the stack must hold n
// KiB.
//
//go:noinline
func depth(n int) byte {
	var pad [1 << 10]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		return pad[0]
	}
	return depth(n-1) + pad[n%len(pad)]
}

// BenchmarkGrow compares a fresh goroutine that goes 12 KiB deep with and
// without Grow first: with it, one stack copy at 2 KiB; without, the
// runtime's doublings (2→4→8→16 KiB), three copies of a stack in use.
func BenchmarkGrow(b *testing.B) {
	for _, grow := range []bool{true, false} {
		name := "runtime"
		if grow {
			name = "grow"
		}
		b.Run(name, func(b *testing.B) {
			done := make(chan byte)
			b.ReportAllocs()
			for b.Loop() {
				go func() {
					if grow {
						Grow()
					}
					done <- depth(12)
				}()
				<-done
			}
		})
	}
}

func TestGrowKeepsWorking(t *testing.T) {
	t.Parallel()
	done := make(chan byte)
	go func() {
		Grow()
		done <- depth(40) // deeper than Grow's room: the runtime still grows it
	}()
	if got, want := <-done, depth(40); got != want {
		t.Fatalf("depth(40) = %d on a grown stack, %d on this one", got, want)
	}
	runtime.GC()
}
