package filter

import (
	"strconv"
	"strings"
)

// SyntaxError is a filter expression that [Parse] cannot read. It says where, what was
// found there and what would have been accepted instead.
type SyntaxError struct {
	// Pos is the byte offset in the expression where the problem starts.
	Pos int
	// Line and Col give the same place 1-based, Col counted in characters; the message
	// shows them only for an expression of more than one line.
	Line, Col int
	// Msg says what is wrong, such as `found ")"` or "unterminated string".
	Msg string
	// Expected lists what the grammar accepts at Pos: literal tokens such as "==" or
	// "(", and the classes "key", "string", "number" and "end of input". It is empty
	// when the problem is inside a token (a bad escape, an unterminated string).
	Expected []string

	multiline bool
}

// Token classes in Expected.
const (
	expectKey    = "key"
	expectString = "string"
	expectNumber = "number"
	expectEnd    = "end of input"
)

func (e *SyntaxError) Error() string {
	var b strings.Builder
	b.WriteString("filter: syntax error at ")
	if e.multiline {
		b.WriteString("line " + strconv.Itoa(e.Line) + ", column " + strconv.Itoa(e.Col) + " (")
	}
	b.WriteString("offset " + strconv.Itoa(e.Pos))
	if e.multiline {
		b.WriteByte(')')
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if len(e.Expected) > 0 {
		b.WriteString("; expected ")
		for i, x := range e.Expected {
			switch {
			case i == 0:
			case i == len(e.Expected)-1:
				b.WriteString(" or ")
			default:
				b.WriteString(", ")
			}
			b.WriteString(describeExpected(x))
		}
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalid) hold for syntax errors too, so a caller handling
// a filter from either source tests one sentinel.
func (e *SyntaxError) Is(target error) bool { return target == ErrInvalid }

func describeExpected(x string) string {
	switch x {
	case expectKey, expectString, expectNumber:
		return "a " + x
	case expectEnd:
		return x
	}
	return strconv.Quote(x)
}

// position fills Line and Col for a byte offset of src.
func (e *SyntaxError) position(src string) {
	e.multiline = strings.IndexByte(src, '\n') >= 0
	before := src[:min(e.Pos, len(src))]
	e.Line = strings.Count(before, "\n") + 1
	lineStart := strings.LastIndexByte(before, '\n') + 1
	e.Col = len([]rune(before[lineStart:])) + 1
}
