package fossil

import "math/bits"

// digits lists the format's base-64 digits in order of value. It is not the RFC 4648
// alphabet: decimal digits come first, so small numbers read as themselves.
const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~"

// digitValue maps a byte to its digit value, or to -1 for a byte that ends a number.
var digitValue = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < len(digits); i++ {
		t[digits[i]] = int8(i)
	}
	return t
}()

// appendNumber writes v in the format's base 64.
func appendNumber(dst []byte, v uint64) []byte {
	if v == 0 {
		return append(dst, '0')
	}
	var buf [11]byte // 64 bits need at most 11 digits of 6 bits
	i := len(buf)
	for v > 0 {
		i--
		buf[i] = digits[v&63]
		v >>= 6
	}
	return append(dst, buf[i:]...)
}

// numberLen is how many digits appendNumber writes for v.
func numberLen(v uint64) int {
	if v == 0 {
		return 1
	}
	return (bits.Len64(v) + 5) / 6
}
