// Package stack grows a goroutine's stack once, ahead of deep work.
//
// A goroutine starts with a small stack that the runtime doubles, copying it
// each time, whenever a call needs more room. A request served through every
// stage of the chain, the handler and the storage backend goes deep enough
// to cross several doublings, and net/http runs every request (every
// HTTP/2 stream) on a fresh goroutine: the copies showed as ~10% of the
// server's CPU in a GET profile (runtime.copystack). [Grow], called first
// on such a goroutine, makes the runtime size the stack for the whole
// request in one step, while the stack is still shallow and cheap to copy.
package stack
