package fossil

import (
	"math/bits"
	"sync"
)

// blockSize is the length of the source blocks that are indexed and of the window that
// rolls over the target. Shorter matches are not worth a copy command anyway: a copy
// costs up to a dozen bytes and an extra insert header.
const blockSize = 16

// hashBase is the multiplier of the polynomial rolling hash. Any odd constant with
// well-spread bits works; this one is the 32-bit FNV prime.
const hashBase = 0x01000193

// hashDrop is hashBase^(blockSize-1): the weight of the byte that leaves the window.
var hashDrop = func() uint32 {
	p := uint32(1)
	for range blockSize - 1 {
		p *= hashBase
	}
	return p
}()

// hashBlock hashes the first blockSize bytes of b.
func hashBlock(b []byte) uint32 {
	b = b[:blockSize]
	var h uint32
	for _, c := range b {
		h = h*hashBase + uint32(c)
	}
	return h
}

// rollHash moves the window of h one byte on: out leaves, in enters.
func rollHash(h uint32, out, in byte) uint32 {
	return (h-uint32(out)*hashDrop)*hashBase + uint32(in)
}

// maxPooledBlocks caps the index kept for reuse, so that one huge publication does not
// pin a large table for the life of the process.
const maxPooledBlocks = 1 << 16

// index maps the hash of every aligned source block to the blocks that have it. Block
// numbers are stored plus one, so that zero means "none" and a cleared table is empty.
type index struct {
	head  []int32 // bucket -> last block in the bucket
	next  []int32 // block -> previous block in the same bucket
	shift uint    // turns a mixed hash into a bucket number
}

var indexPool = sync.Pool{New: func() any { return new(index) }}

// newIndex indexes source, which holds at least one block. Release it with free.
func newIndex(source []byte) *index {
	ix := indexPool.Get().(*index)
	n := len(source) / blockSize
	tableBits := bits.Len(uint(n)) // a power of two above n: chains stay short
	size := 1 << tableBits
	if cap(ix.head) < size {
		ix.head = make([]int32, size)
	} else {
		ix.head = ix.head[:size]
		clear(ix.head)
	}
	if cap(ix.next) < n {
		ix.next = make([]int32, n)
	} else {
		ix.next = ix.next[:n]
	}
	ix.shift = uint(32 - tableBits)
	for b := range n {
		k := ix.bucket(hashBlock(source[b*blockSize:]))
		ix.next[b] = ix.head[k]
		ix.head[k] = int32(b + 1)
	}
	return ix
}

// bucket spreads h over the table. The multiply moves the well-mixed high bits of the
// product into place; the polynomial hash's low bits alone depend only on low bits of
// the input bytes.
func (ix *index) bucket(h uint32) uint32 {
	return (h * 0x9E3779B1) >> ix.shift
}

func (ix *index) free() {
	if len(ix.next) > maxPooledBlocks {
		return
	}
	indexPool.Put(ix)
}
