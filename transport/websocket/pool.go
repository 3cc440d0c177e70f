package websocket

import (
	"math/bits"
	"sync"
)

// Buffers come from power-of-two size classes so that a connection which
// read one large message gives the memory back instead of keeping its peak.
const (
	minClassShift = 12 // 4 KiB, also the size of a read buffer
	numClasses    = 9  // up to 1 MiB; larger buffers are allocated and dropped
)

var bufPools [numClasses]sync.Pool

// getBuf returns a zero-length buffer with room for at least n bytes.
func getBuf(n int) *[]byte {
	i := classOf(n)
	if i < numClasses {
		if v := bufPools[i].Get(); v != nil {
			return v.(*[]byte)
		}
		b := make([]byte, 0, 1<<(i+minClassShift))
		return &b
	}
	b := make([]byte, 0, n)
	return &b
}

// putBuf gives a buffer from getBuf back; buffers outside the classes are
// left to the garbage collector.
func putBuf(p *[]byte) {
	c := cap(*p)
	i := classOf(c)
	if i >= numClasses || c != 1<<(i+minClassShift) {
		return
	}
	*p = (*p)[:0]
	bufPools[i].Put(p)
}

// classOf is the smallest class holding n bytes.
func classOf(n int) int {
	if n <= 1<<minClassShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minClassShift
}
