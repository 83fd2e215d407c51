package stack

// Size is the frame of Grow. The runtime sizes the stack to the next power
// of two that fits it with its guard, 16 KiB: room for a GET or a write
// through the whole chain, measured with BenchmarkGETStackGrowth of the e2e
// module's loadbench package (a 4 KiB frame, an 8 KiB stack, saves little; a
// 16 KiB frame, a 32 KiB stack, costs more to zero and allocate than it
// saves).
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

// LargeSize is the frame of GrowLarge: the runtime sizes the stack to 64
// KiB. A write (create, update, patch) recurses through the schema
// validator (jsonschema's frames are large) and the field manager after the
// chain, and grew to 64 KiB anyway, in copies of a deep stack: on a create
// of the environments example those copies were 16% of the server's CPU,
// 1% after GrowLarge.
const LargeSize = 48 << 10

// GrowLarge is Grow for a 64 KiB stack.
//
//go:noinline
func GrowLarge() {
	var room [LargeSize]byte
	touchLarge(&room)
}

//go:noinline
func touchLarge(*[LargeSize]byte) {}
