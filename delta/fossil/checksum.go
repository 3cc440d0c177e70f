package fossil

import "encoding/binary"

// checksum sums b as big-endian 32-bit words, wrapping at 2^32, with a short last word
// padded by zero bytes on the right. Appliers use it to tell a delta that was applied to
// the wrong source from a good one.
func checksum(b []byte) uint32 {
	var sum uint32
	for len(b) >= 16 {
		x := binary.BigEndian.Uint64(b)
		y := binary.BigEndian.Uint64(b[8:])
		sum += uint32(x>>32) + uint32(x) + uint32(y>>32) + uint32(y)
		b = b[16:]
	}
	for len(b) >= 4 {
		sum += binary.BigEndian.Uint32(b)
		b = b[4:]
	}
	var last uint32
	for i, c := range b {
		last |= uint32(c) << (24 - 8*i)
	}
	return sum + last
}
