package stackgrow

import (
	"testing"
)

// TestGrowStaysOnStack: the array must live on the stack, where it makes
// the stack grow; on the heap it would be 12 KiB of garbage per call.
func TestGrowStaysOnStack(t *testing.T) {
	if n := testing.AllocsPerRun(100, Grow); n != 0 {
		t.Fatalf("Grow allocates %v times per call, want 0", n)
	}
}

// deep recurses depth times with a frame of about 512 bytes.
//
//go:noinline
func deep(depth int) byte {
	var frame [448]byte
	frame[depth%len(frame)] = byte(depth)
	if depth == 0 {
		return frame[0]
	}
	return deep(depth-1) + frame[(depth+1)%len(frame)]
}

// BenchmarkFreshGoroutine runs a call chain about 12 KiB deep on a new
// goroutine, as a connect command does, with and without Grow first.
func BenchmarkFreshGoroutine(b *testing.B) {
	for _, grow := range []bool{false, true} {
		name := "plain"
		if grow {
			name = "grown"
		}
		b.Run(name, func(b *testing.B) {
			done := make(chan byte)
			for b.Loop() {
				go func() {
					if grow {
						Grow()
					}
					done <- deep(24)
				}()
				<-done
			}
		})
	}
}
