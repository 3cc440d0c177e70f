package filter

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokIdent
	tokString
	tokNumber
	tokLParen
	tokRParen
	tokComma
	tokEq
	tokNe
	tokLt
	tokLe
	tokGt
	tokGe
	tokBang
	tokAnd
	tokOr
)

// token is one lexeme: text is what the expression says, val what it means (a string
// literal unescaped, otherwise the same as text).
type token struct {
	kind tokenKind
	pos  int
	text string
	val  string
}

// lexer cuts an expression into tokens on demand, so that an error deeper in the input
// is reported only once the parser gets there.
type lexer struct {
	src string
	pos int
}

var punctuation = []struct {
	text string
	kind tokenKind
}{
	{"==", tokEq}, {"!=", tokNe}, {"<=", tokLe}, {">=", tokGe}, {"&&", tokAnd}, {"||", tokOr},
	{"<", tokLt}, {">", tokGt}, {"!", tokBang}, {"(", tokLParen}, {")", tokRParen}, {",", tokComma},
}

func (l *lexer) next() (token, *SyntaxError) {
	for l.pos < len(l.src) && isSpace(l.src[l.pos]) {
		l.pos++
	}
	start := l.pos
	if start == len(l.src) {
		return token{kind: tokEOF, pos: start}, nil
	}
	c := l.src[start]
	switch {
	case c == '"':
		return l.string()
	case isDigit(c) || c == '-' && start+1 < len(l.src) && isDigit(l.src[start+1]):
		return l.number()
	case c < utf8.RuneSelf && (c == '_' || unicode.IsLetter(rune(c))):
		return l.ident()
	case c >= utf8.RuneSelf:
		if r, _ := utf8.DecodeRuneInString(l.src[start:]); unicode.IsLetter(r) {
			return l.ident()
		}
	}
	for _, p := range punctuation {
		if strings.HasPrefix(l.src[start:], p.text) {
			l.pos += len(p.text)
			return token{kind: p.kind, pos: start, text: p.text, val: p.text}, nil
		}
	}
	r, size := utf8.DecodeRuneInString(l.src[start:])
	found := l.src[start : start+size]
	err := &SyntaxError{Pos: start, Msg: "unexpected character " + strconv.QuoteToASCII(found)}
	switch r {
	case '=':
		err.Expected = []string{"=="}
	case '&':
		err.Expected = []string{"&&"}
	case '|':
		err.Expected = []string{"||"}
	}
	return token{}, err
}

func (l *lexer) ident() (token, *SyntaxError) {
	start := l.pos
	for l.pos < len(l.src) {
		r, size := utf8.DecodeRuneInString(l.src[l.pos:])
		if !isIdentRune(r) || r == utf8.RuneError && size == 1 {
			break
		}
		l.pos += size
	}
	text := l.src[start:l.pos]
	return token{kind: tokIdent, pos: start, text: text, val: text}, nil
}

func (l *lexer) number() (token, *SyntaxError) {
	start := l.pos
	end := scanNumber(l.src, start)
	if end < len(l.src) {
		if r, _ := utf8.DecodeRuneInString(l.src[end:]); isIdentRune(r) {
			return token{}, &SyntaxError{Pos: start, Msg: "malformed number " + strconv.Quote(l.src[start:identEnd(l.src, end)])}
		}
	}
	l.pos = end
	text := l.src[start:end]
	return token{kind: tokNumber, pos: start, text: text, val: text}, nil
}

// scanNumber returns the end of the longest number literal at s[i:]: -?digits, then
// optionally .digits, then optionally (e|E)[+-]digits. A part that is not complete is
// left out, and the caller sees what follows.
func scanNumber(s string, i int) int {
	if i < len(s) && s[i] == '-' {
		i++
	}
	i = skipDigits(s, i)
	if i+1 < len(s) && s[i] == '.' && isDigit(s[i+1]) {
		i = skipDigits(s, i+1)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			i = skipDigits(s, j)
		}
	}
	return i
}

// isNumberLiteral reports whether s is exactly one number literal, so that Format can
// print it bare.
func isNumberLiteral(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	return digits != "" && isDigit(digits[0]) && scanNumber(s, 0) == len(s)
}

func identEnd(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isIdentRune(r) {
			break
		}
		i += size
	}
	return i
}

func (l *lexer) string() (token, *SyntaxError) {
	start := l.pos
	i := start + 1
	var b strings.Builder
	plain := i // start of the run not yet copied into b
	for {
		if i >= len(l.src) {
			return token{}, &SyntaxError{Pos: start, Msg: "unterminated string"}
		}
		switch l.src[i] {
		case '"':
			val := l.src[plain:i]
			if b.Len() > 0 || plain != start+1 {
				b.WriteString(val)
				val = b.String()
			}
			l.pos = i + 1
			return token{kind: tokString, pos: start, text: l.src[start:l.pos], val: val}, nil
		case '\n':
			return token{}, &SyntaxError{Pos: i, Msg: "newline in string"}
		case '\\':
			b.WriteString(l.src[plain:i])
			n, err := unescape(&b, l.src, i)
			if err != nil {
				return token{}, err
			}
			i += n
			plain = i
		default:
			i++
		}
	}
}

// unescape writes the escape sequence at s[i:] (which starts with a backslash) to b and
// returns its length.
func unescape(b *strings.Builder, s string, i int) (int, *SyntaxError) {
	if i+1 >= len(s) {
		return 0, &SyntaxError{Pos: i, Msg: "unterminated string"}
	}
	if c, ok := simpleEscapes[s[i+1]]; ok {
		b.WriteByte(c)
		return 2, nil
	}
	var digits int
	switch s[i+1] {
	case 'x':
		digits = 2
	case 'u':
		digits = 4
	case 'U':
		digits = 8
	default:
		r, _ := utf8.DecodeRuneInString(s[i+1:])
		return 0, &SyntaxError{Pos: i, Msg: "unknown escape \\" + string(r)}
	}
	end := i + 2 + digits
	if end > len(s) {
		return 0, &SyntaxError{Pos: i, Msg: "escape \\" + s[i+1:i+2] + " needs " + strconv.Itoa(digits) + " hex digits"}
	}
	v, err := strconv.ParseUint(s[i+2:end], 16, 32)
	if err != nil || strings.ContainsAny(s[i+2:end], "+-_") {
		return 0, &SyntaxError{Pos: i, Msg: "escape \\" + s[i+1:i+2] + " needs " + strconv.Itoa(digits) + " hex digits"}
	}
	if s[i+1] == 'x' {
		b.WriteByte(byte(v))
		return end - i, nil
	}
	if !utf8.ValidRune(rune(v)) {
		return 0, &SyntaxError{Pos: i, Msg: "escape " + s[i:end] + " is not a valid Unicode code point"}
	}
	b.WriteRune(rune(v))
	return end - i, nil
}

var simpleEscapes = map[byte]byte{
	'"': '"', '\\': '\\', 'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'f': '\f', 'v': '\v', 'a': '\a',
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isIdentRune(r rune) bool {
	return r == '_' || r == '-' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// isIdent reports whether key can be written bare in an expression.
func isIdent(key string) bool {
	if key == "" || !utf8.ValidString(key) {
		return false
	}
	first, _ := utf8.DecodeRuneInString(key)
	if first != '_' && !unicode.IsLetter(first) {
		return false
	}
	for _, r := range key {
		if !isIdentRune(r) {
			return false
		}
	}
	return true
}
