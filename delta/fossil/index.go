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

// Powers of hashBase modulo 2^32: the weight of each byte of the window. hashDrop,
// the weight of the byte that leaves the window, is the last.
const (
	mask32 = 1<<32 - 1
	pow2   = hashBase * hashBase & mask32
	pow3   = pow2 * hashBase & mask32
	pow4   = pow3 * hashBase & mask32
	pow5   = pow4 * hashBase & mask32
	pow6   = pow5 * hashBase & mask32
	pow7   = pow6 * hashBase & mask32
	pow8   = pow7 * hashBase & mask32
	pow9   = pow8 * hashBase & mask32
	pow10  = pow9 * hashBase & mask32
	pow11  = pow10 * hashBase & mask32
	pow12  = pow11 * hashBase & mask32
	pow13  = pow12 * hashBase & mask32
	pow14  = pow13 * hashBase & mask32
	pow15  = pow14 * hashBase & mask32

	hashDrop = pow15
)

// hashBlock hashes the first blockSize bytes of b. It is the same polynomial rollHash
// keeps, written out so that the multiplications do not wait on each other: indexing the
// source is most of the cost of a delta between similar documents.
func hashBlock(b []byte) uint32 {
	b = b[:blockSize]
	return uint32(b[0])*pow15 + uint32(b[1])*pow14 + uint32(b[2])*pow13 + uint32(b[3])*pow12 +
		uint32(b[4])*pow11 + uint32(b[5])*pow10 + uint32(b[6])*pow9 + uint32(b[7])*pow8 +
		uint32(b[8])*pow7 + uint32(b[9])*pow6 + uint32(b[10])*pow5 + uint32(b[11])*pow4 +
		uint32(b[12])*pow3 + uint32(b[13])*pow2 + uint32(b[14])*hashBase + uint32(b[15])
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
