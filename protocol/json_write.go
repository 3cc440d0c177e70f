package protocol

import (
	"strconv"
	"unicode/utf8"
)

// Objects are written with a leading comma before every member (keys are constants
// such as `,"id":`), and closeObject turns the first comma into '{'. That spares each
// field a "was anything written yet" branch, and zero values are simply not appended.

// closeObject finishes an object whose members were appended after start.
func closeObject(b []byte, start int) []byte {
	if len(b) == start {
		return append(b, '{', '}')
	}
	b[start] = '{'
	return append(b, '}')
}

// The Always variants write a field also when it holds its zero value: the
// SDKs read some fields without a default (centrifuge-js takes a missing
// num_clients as undefined, not 0), so those are always on the wire, as
// Centrifugo sends them.

func appendStringFieldAlways(b []byte, key, v string) []byte {
	return appendString(append(b, key...), v)
}

func appendUintFieldAlways(b []byte, key string, v uint64) []byte {
	return strconv.AppendUint(append(b, key...), v, 10)
}

// appendMessagesFieldAlways writes an empty list as [].
func appendMessagesFieldAlways[T any](b []byte, key string, ms []*T, enc func([]byte, *T) []byte) []byte {
	if len(ms) == 0 {
		return append(append(b, key...), '[', ']')
	}
	return appendMessagesField(b, key, ms, enc)
}

func appendStringField(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return appendString(append(b, key...), v)
}

func appendBoolField(b []byte, key string, v bool) []byte {
	if !v {
		return b
	}
	return append(append(b, key...), "true"...)
}

func appendUintField(b []byte, key string, v uint64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendUint(append(b, key...), v, 10)
}

func appendIntField(b []byte, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), v, 10)
}

// appendRawField writes a bytes field verbatim: on JSON connections it holds embedded
// JSON. Checking that it does is the job of whoever accepted the bytes.
func appendRawField(b []byte, key string, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return append(append(b, key...), v...)
}

// appendMessageField writes a set message field, even an empty one ({}), as presence
// carries meaning there (a ping result, a command kind).
func appendMessageField[T any](b []byte, key string, m *T, enc func([]byte, *T) []byte) []byte {
	if m == nil {
		return b
	}
	return enc(append(b, key...), m)
}

func appendMessagesField[T any](b []byte, key string, ms []*T, enc func([]byte, *T) []byte) []byte {
	if len(ms) == 0 {
		return b
	}
	b = append(b, key...)
	b = append(b, '[')
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		if m == nil {
			b = append(b, '{', '}')
			continue
		}
		b = enc(b, m)
	}
	return append(b, ']')
}

func appendStringsField(b []byte, key string, vs []string) []byte {
	if len(vs) == 0 {
		return b
	}
	b = append(b, key...)
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, v)
	}
	return append(b, ']')
}

// smallMap is the size up to which map keys are sorted in a stack array; tags and
// subscription maps are nearly always this small, so encoding them does not allocate.
const smallMap = 16

// mapEntry is a key and value taken out of a map in one iteration, which spares the
// encoder a lookup per key after sorting.
type mapEntry[V any] struct {
	key string
	val V
}

// sortedEntries returns the entries of m ordered by key, so that equal messages encode
// to equal bytes (golden tests, caches keyed by content). Up to smallMap entries live in
// buf, on the caller's stack.
func sortedEntries[V any](m map[string]V, buf *[smallMap]mapEntry[V]) []mapEntry[V] {
	es := buf[:0]
	if len(m) > smallMap {
		es = make([]mapEntry[V], 0, len(m))
	}
	for k, v := range m {
		es = append(es, mapEntry[V]{k, v})
	}
	for i := 1; i < len(es); i++ { // insertion sort: tiny n, no allocation
		for j := i; j > 0 && es[j].key < es[j-1].key; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
	return es
}

func appendStringMapField(b []byte, key string, m map[string]string) []byte {
	if len(m) == 0 {
		return b
	}
	var buf [smallMap]mapEntry[string]
	b = append(b, key...)
	b = append(b, '{')
	for i, e := range sortedEntries(m, &buf) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, e.key)
		b = append(b, ':')
		b = appendString(b, e.val)
	}
	return append(b, '}')
}

func appendMessageMapField[T any](b []byte, key string, m map[string]*T, enc func([]byte, *T) []byte) []byte {
	if len(m) == 0 {
		return b
	}
	var buf [smallMap]mapEntry[*T]
	b = append(b, key...)
	b = append(b, '{')
	for i, e := range sortedEntries(m, &buf) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, e.key)
		b = append(b, ':')
		if e.val != nil {
			b = enc(b, e.val)
		} else {
			b = append(b, '{', '}')
		}
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string. Invalid UTF-8 is replaced by U+FFFD, so the
// output is valid JSON whatever a protobuf peer put into a string field; U+2028 and
// U+2029 are escaped because JavaScript source cannot hold them raw.
func appendString[S ~string | ~[]byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if stringPlain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = appendEscape(b, c)
			i++
			start = i
			continue
		}
		ch, size := decodeRune(s[i:])
		if (ch == utf8.RuneError && size == 1) || ch == '\u2028' || ch == '\u2029' {
			b = append(b, s[start:i]...)
			if ch == utf8.RuneError {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, `\u202`...)
				b = append(b, hexDigits[ch&0xf])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendEscape(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

// decodeRune decodes the first rune of s, string or bytes alike, without converting
// (and so copying) the rest of s.
func decodeRune[S ~string | ~[]byte](s S) (rune, int) {
	var buf [utf8.UTFMax]byte
	n := copy(buf[:], s)
	return utf8.DecodeRune(buf[:n])
}
