package fossil

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// maxCandidates bounds how many source blocks sharing a hash are tried at one target
// position, which keeps repetitive sources (runs of one byte, repeated records) linear.
const maxCandidates = 64

// Create returns a delta that turns source into target.
func Create(source, target []byte) []byte {
	return AppendCreate(make([]byte, 0, len(target)/4+32), source, target)
}

// AppendCreate appends a delta that turns source into target to dst and returns the
// extended buffer. With a dst of enough capacity it does not allocate.
func AppendCreate(dst, source, target []byte) []byte {
	dst = appendNumber(dst, uint64(len(target)))
	dst = append(dst, '\n')
	switch {
	case len(target) == 0:
	case bytes.Equal(source, target):
		dst = appendCopy(dst, 0, len(target))
	case len(source) < blockSize || len(target) < blockSize:
		dst = appendInsert(dst, target)
	default:
		ix := newIndex(source)
		dst = ix.appendCommands(dst, source, target)
		ix.free()
	}
	dst = appendNumber(dst, uint64(checksum(target)))
	return append(dst, ';')
}

// match is a run of target bytes found in the source.
type match struct {
	target, source, n int // start in target, start in source, length
	gain              int // bytes saved by copying instead of inserting
}

// appendCommands writes the copy and insert commands that build target. pending is the
// start of the target bytes no command covers yet; the hash window starts at pos.
func (ix *index) appendCommands(dst, source, target []byte) []byte {
	pending, pos := 0, 0
	h := hashBlock(target)
	for {
		if m, ok := ix.best(source, target, pending, pos, h); ok {
			if m.target > pending {
				dst = appendInsert(dst, target[pending:m.target])
			}
			dst = appendCopy(dst, m.source, m.n)
			pending = m.target + m.n
			pos = pending
			if pos+blockSize > len(target) {
				break
			}
			h = hashBlock(target[pos:])
			continue
		}
		if pos+blockSize >= len(target) {
			break
		}
		h = rollHash(h, target[pos], target[pos+blockSize])
		pos++
	}
	if pending < len(target) {
		dst = appendInsert(dst, target[pending:])
	}
	return dst
}

// best looks up the window of target at pos (hash h) and returns the candidate that
// saves the most bytes, if any saves some. A match may reach back to pending.
func (ix *index) best(source, target []byte, pending, pos int, h uint32) (match, bool) {
	var top match
	cand := ix.head[ix.bucket(h)]
	for tries := 0; cand != 0 && tries < maxCandidates; tries++ {
		s := int(cand-1) * blockSize
		cand = ix.next[cand-1]
		// Most candidates in unrelated data are hash collisions; the first word tells.
		if binary.LittleEndian.Uint64(source[s:]) != binary.LittleEndian.Uint64(target[pos:]) {
			continue
		}
		fwd := commonPrefix(source[s:], target[pos:])
		if fwd < blockSize {
			continue // hash collision
		}
		back := commonSuffix(source[:s], target[pending:pos])
		m := trimToRunes(target, match{target: pos - back, source: s - back, n: back + fwd})
		m.gain = m.n - copyCost(m.source, m.n)
		if m.target > pending {
			m.gain -= insertHeaderCost(m.target - pending)
		}
		if m.gain > top.gain {
			top = m
			if m.target+m.n == len(target) {
				break // nothing can cover more of the target
			}
		}
	}
	return top, top.gain > 0
}

// trimToRunes shrinks m so that it neither starts nor ends inside a UTF-8 sequence of
// target; the inserts around it then hold whole characters. A sequence has at most
// three continuation bytes, so binary data loses at most three bytes at either end.
func trimToRunes(target []byte, m match) match {
	for i := 0; i < 3 && m.n > 0 && isContinuation(target[m.target]); i++ {
		m.target++
		m.source++
		m.n--
	}
	for i := 0; i < 3 && m.n > 0 && m.target+m.n < len(target) && isContinuation(target[m.target+m.n]); i++ {
		m.n--
	}
	return m
}

func isContinuation(c byte) bool { return c&0xC0 == 0x80 }

// commonPrefix is the length of the common prefix of a and b. Copies of unchanged JSON
// run to kilobytes, so equal stretches are skipped with the vectorized bytes.Equal and
// only the stretch holding the difference is searched word by word.
func commonPrefix(a, b []byte) int {
	const stretch = 256
	n := min(len(a), len(b))
	i := 0
	for i+stretch <= n && bytes.Equal(a[i:i+stretch], b[i:i+stretch]) {
		i += stretch
	}
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < n && a[i] == b[i]; i++ {
	}
	return i
}

// commonSuffix is the length of the common suffix of a and b.
func commonSuffix(a, b []byte) int {
	i, j := len(a), len(b)
	for i > 0 && j > 0 && a[i-1] == b[j-1] {
		i--
		j--
	}
	return len(b) - j
}

// copyCost is the length of the command copying n bytes at offset off.
func copyCost(off, n int) int {
	return numberLen(uint64(n)) + numberLen(uint64(off)) + 2
}

// insertHeaderCost is the length of an insert command without its bytes.
func insertHeaderCost(n int) int {
	return numberLen(uint64(n)) + 1
}

func appendCopy(dst []byte, off, n int) []byte {
	dst = appendNumber(dst, uint64(n))
	dst = append(dst, '@')
	dst = appendNumber(dst, uint64(off))
	return append(dst, ',')
}

func appendInsert(dst, b []byte) []byte {
	dst = appendNumber(dst, uint64(len(b)))
	dst = append(dst, ':')
	return append(dst, b...)
}
