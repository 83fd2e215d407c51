package stack

// Size is the frame of Grow. The runtime sizes the stack to the next power
// of two that fits it with its guard, 16 KiB: room for a GET or a write
// through the whole chain, measured with the root package's
// BenchmarkGETStackGrowth (a 4 KiB frame, an 8 KiB stack, saves little; a 16
// KiB frame, a 32 KiB stack, costs more to zero and allocate than it saves).
const Size = 8 << 10

// Grow makes the calling goroutine's stack at least 16 KiB deep (a no-op
// when it already is): its frame is Size bytes, so the runtime grows the
// stack to fit it in one copy, while little of it is in use.
//
//go:noinline
func Grow() {
	var room [Size]byte
	touch(&room)
}

//go:noinline
func touch(*[Size]byte) {}
