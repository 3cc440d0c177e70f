package protocol

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonReader is a single-pass JSON decoder that writes straight into the generated
// message structs. It keeps the first error and turns every later call into a no-op, so
// message decoders read as a plain sequence of field reads with one check at the end.
type jsonReader struct {
	data  []byte
	pos   int
	depth int
	// maxDepth bounds depth (CommandDecoder.MaxJSONDepth).
	maxDepth int
	err      error
	key      []byte // key of the current field; valid until the next field call
	scratch  []byte // unescaped keys live here
}

func (r *jsonReader) reset(data []byte) {
	r.data = data
	r.pos = 0
	r.depth = 0
	r.maxDepth = DefaultMaxJSONDepth
	r.err = nil
	r.key = nil
}

func (r *jsonReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: json at offset %d: %s", ErrMalformed, r.pos, what)
	}
}

func (r *jsonReader) skipSpace() {
	if r.pos < len(r.data) && r.data[r.pos] > ' ' {
		return // the common case: compact JSON has no whitespace
	}
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, or 0 at the end of input or after an
// error (0 never starts a valid JSON value, so callers treat it as a type error).
func (r *jsonReader) peek() byte {
	if r.err != nil {
		return 0
	}
	r.skipSpace()
	if r.pos >= len(r.data) {
		return 0
	}
	return r.data[r.pos]
}

func (r *jsonReader) expect(c byte, what string) bool {
	if r.peek() != c {
		r.fail(what)
		return false
	}
	r.pos++
	return true
}

// null consumes a null literal if one is next. Null stands for the field's zero value,
// as in protobuf's JSON mapping.
func (r *jsonReader) null() bool {
	if r.peek() != 'n' {
		return false
	}
	r.literal("null")
	return r.err == nil
}

func (r *jsonReader) literal(lit string) {
	if len(r.data)-r.pos < len(lit) || string(r.data[r.pos:r.pos+len(lit)]) != lit {
		r.fail("invalid literal")
		return
	}
	r.pos += len(lit)
}

func (r *jsonReader) enter() bool {
	r.depth++
	if r.depth > r.maxDepth {
		r.fail("nested too deep")
		return false
	}
	return true
}

// beginObject consumes '{'. It returns false for null (the field stays unset) and on
// any other value, which is a type error.
func (r *jsonReader) beginObject() bool {
	switch r.peek() {
	case '{':
		r.pos++
		return r.enter()
	case 'n':
		r.null()
		return false
	}
	r.fail("expected object")
	return false
}

// beginArray is beginObject for '['.
func (r *jsonReader) beginArray() bool {
	switch r.peek() {
	case '[':
		r.pos++
		return r.enter()
	case 'n':
		r.null()
		return false
	}
	r.fail("expected array")
	return false
}

// field advances to the next member of the object opened by beginObject and leaves its
// key in r.key, positioned before the value. It returns false at '}' or on error.
func (r *jsonReader) field(first *bool) bool {
	if !r.next(first, '}') {
		return false
	}
	if r.peek() != '"' {
		r.fail("expected object key")
		return false
	}
	start, end, escaped := r.scanString()
	if r.err != nil {
		return false
	}
	r.key = r.data[start:end]
	if escaped {
		r.scratch = unescape(r.scratch[:0], r.key)
		r.key = r.scratch
	}
	return r.expect(':', "expected ':'")
}

// elem advances to the next element of the array opened by beginArray.
func (r *jsonReader) elem(first *bool) bool {
	return r.next(first, ']')
}

func (r *jsonReader) next(first *bool, closing byte) bool {
	c := r.peek()
	if r.err != nil {
		return false
	}
	if c == closing {
		r.pos++
		r.depth--
		return false
	}
	if *first {
		*first = false
		return true
	}
	if c != ',' {
		r.fail("expected ',' or '" + string(closing) + "'")
		return false
	}
	r.pos++
	return true
}

// str reads a string value; null reads as "".
func (r *jsonReader) str() string {
	switch r.peek() {
	case '"':
		start, end, escaped := r.scanString()
		if r.err != nil {
			return ""
		}
		if escaped {
			// The key of the current field may live in scratch too; it has been
			// matched (or copied) by the time its value is read.
			r.scratch = unescape(r.scratch[:0], r.data[start:end])
			return string(r.scratch)
		}
		return string(r.data[start:end])
	case 'n':
		r.null()
		return ""
	}
	r.fail("expected string")
	return ""
}

// boolean reads true or false; null reads as false.
func (r *jsonReader) boolean() bool {
	switch r.peek() {
	case 't':
		r.literal("true")
		return r.err == nil
	case 'f':
		r.literal("false")
	case 'n':
		r.null()
	default:
		r.fail("expected boolean")
	}
	return false
}

// raw returns a copy of the next value's bytes, whatever the value is: bytes fields
// carry embedded JSON, and the copy keeps decoded messages from pinning the frame.
func (r *jsonReader) raw() []byte {
	r.peek()
	start := r.pos
	r.skipValue()
	if r.err != nil {
		return nil
	}
	return append([]byte(nil), r.data[start:r.pos]...)
}

// skipValue validates and steps over one value of any type.
func (r *jsonReader) skipValue() {
	switch c := r.peek(); {
	case c == '{':
		r.pos++
		if !r.enter() {
			return
		}
		for first := true; r.field(&first); {
			r.skipValue()
		}
	case c == '[':
		r.pos++
		if !r.enter() {
			return
		}
		for first := true; r.elem(&first); {
			r.skipValue()
		}
	case c == '"':
		r.scanString()
	case c == 't':
		r.literal("true")
	case c == 'f':
		r.literal("false")
	case c == 'n':
		r.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		r.scanNumber()
	default:
		r.fail("expected value")
	}
}

// stringPlain marks bytes that stand for themselves inside a JSON string.
var stringPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString validates the string starting at r.pos (which holds '"') and returns the
// bounds of its contents. Control characters and invalid UTF-8 are rejected: the bytes
// go out again to other clients, and JSON requires UTF-8.
func (r *jsonReader) scanString() (start, end int, escaped bool) {
	r.pos++
	start = r.pos
	data := r.data
	for i := r.pos; i < len(data); {
		i = skipPlainWords(data, i)
		if i >= len(data) {
			break
		}
		c := data[i]
		if stringPlain[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			r.pos = i + 1
			return start, i, escaped
		case c == '\\':
			n := escapeLen(data[i:])
			if n == 0 {
				r.pos = i
				r.fail("invalid escape in string")
				return 0, 0, false
			}
			escaped = true
			i += n
		case c < 0x20:
			r.pos = i
			r.fail("control character in string")
			return 0, 0, false
		default:
			ch, size := utf8.DecodeRune(data[i:])
			if ch == utf8.RuneError && size <= 1 {
				r.pos = i
				r.fail("invalid UTF-8 in string")
				return 0, 0, false
			}
			i += size
		}
	}
	r.pos = len(data)
	r.fail("unterminated string")
	return 0, 0, false
}

// skipPlainWords steps over string contents eight bytes at a time while none of them
// needs a closer look (a quote, a backslash, a control character or non-ASCII), which
// is most of a typical token, channel name or payload.
func skipPlainWords(data []byte, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for i+8 <= len(data) {
		w := binary.LittleEndian.Uint64(data[i:])
		quote := w ^ (ones * '"')
		backslash := w ^ (ones * '\\')
		special := (quote - ones) & ^quote
		special |= (backslash - ones) & ^backslash
		special |= (w - ones*0x20) & ^w // a byte below 0x20
		if (special|w)&highs != 0 {
			return i
		}
		i += 8
	}
	return i
}

// escapeLen returns the length of the escape sequence at the start of s, 0 if invalid.
func escapeLen(s []byte) int {
	if len(s) < 2 {
		return 0
	}
	switch s[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if len(s) < 6 {
			return 0
		}
		for _, h := range s[2:6] {
			if hexVal(h) < 0 {
				return 0
			}
		}
		return 6
	}
	return 0
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func hex4(s []byte) rune {
	return rune(hexVal(s[0])<<12 | hexVal(s[1])<<8 | hexVal(s[2])<<4 | hexVal(s[3]))
}

// unescape appends the decoded form of string contents already checked by scanString.
// A lone surrogate becomes U+FFFD, as JSON allows it but UTF-8 cannot hold it.
func unescape(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch s[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			ch := hex4(s[i+2:])
			i += 6
			if utf16.IsSurrogate(ch) {
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if pair := utf16.DecodeRune(ch, hex4(s[i+2:])); pair != utf8.RuneError {
						ch = pair
						i += 6
					}
				}
				if utf16.IsSurrogate(ch) {
					ch = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, ch)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, s[i+1])
		}
		i += 2
	}
	return dst
}
