// Package stackgrow gives a fresh goroutine a larger stack up front.
//
// A goroutine starts with a small stack and grows it when a call does not
// fit: the runtime allocates a stack twice the size and copies the old
// one, adjusting every frame on it, which costs by the frame. A goroutine
// that is known to go deep (a WebSocket handshake, a connect command with
// its token's claims decoded by encoding/json) pays that once or twice in
// the middle of its work, with a dozen frames to adjust. Growing it first
// thing, while it holds a frame or two, costs a copy of almost nothing and
// the zeroing of the array below.
package stackgrow

// Grow makes the calling goroutine's stack at least 16 KiB. Call it first
// thing in a goroutine that will need that much; later calls cost only
// the zeroing of 12 KiB.
//
//go:noinline
func Grow() {
	var pad [12 << 10]byte
	keep(pad[:])
}

// keep is a call the compiler makes, so that Grow's array and the frame
// holding it are not optimized away; the slice does not escape.
//
//go:noinline
func keep([]byte) {}
