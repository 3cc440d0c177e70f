package websocket

import (
	"bytes"
	stdflate "compress/flate"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/klauspost/compress/flate"
)

// Compression turns on permessage-deflate (RFC 7692) for the upgrades that
// use it. Gyre always negotiates no context takeover in both directions:
// every compressed message stands alone, so the server keeps no deflate
// state per connection (an idle connection costs what it costs without
// compression) and one compressed frame can be sent to every connection
// that negotiated the extension.
//
// A Compression must not be changed once in use; the pointer identifies
// frames made with it (see [Conn.Compression]).
type Compression struct {
	// Level is the deflate level: 1 (fastest) to 9 (smallest), 0 stores,
	// -1 is the library's default and -2 Huffman coding only. Out of that
	// range means 1. A message that its level does not make shorter goes
	// plain: at 0 every message does, and levels 1 to 3 store a message in
	// which they find no repeated strings.
	Level int
	// MinSize is the smallest message, in bytes, that is compressed;
	// shorter ones go as they are.
	MinSize int
	// MaxInflated bounds what a message the client compressed may inflate
	// to, in bytes; past it ReadMessage fails with ErrMessageTooLarge.
	// Zero means the read limit (Options.ReadLimit). The compressed
	// message itself is held to about the read limit either way.
	MaxInflated int64
}

// deflateAnswer is how a handshake answers the client's offers of
// permessage-deflate.
type deflateAnswer uint8

const (
	deflateDeclined deflateAnswer = iota
	// deflateAccepted accepts with no context takeover both ways.
	deflateAccepted
	// deflateAcceptedWindow also names the window the offer limited the
	// server to: RFC 7692 (section 7.1.2.1) accepts server_max_window_bits
	// only by echoing it, and some clients (Python's websockets) refuse an
	// answer without it.
	deflateAcceptedWindow
)

// The answers' values of Sec-WebSocket-Extensions, by deflateAnswer.
var extensionAnswers = [...]string{
	deflateAccepted:       "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
	deflateAcceptedWindow: "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=15",
}

func (z *Compression) level() int {
	if z.Level < flate.HuffmanOnly || z.Level > flate.BestCompression {
		return flate.BestSpeed
	}
	return z.Level
}

// negotiation reads the Sec-WebSocket-Extensions lines of a handshake, in
// order, as one list, which is what repeated header lines mean (RFC 9110,
// section 5.3).
type negotiation struct {
	answer    deflateAnswer // to the first acceptable offer
	malformed bool
}

// add takes the result of scanOffers on the next line. A line that does
// not parse spoils the whole header: the connection goes uncompressed,
// which every client supports, rather than guess what the client meant.
func (n *negotiation) add(a deflateAnswer, ok bool) {
	if n.malformed {
		return
	}
	n.malformed = !ok
	if n.answer == deflateDeclined {
		n.answer = a
	}
}

func (n *negotiation) result() deflateAnswer {
	if n.malformed {
		return deflateDeclined
	}
	return n.answer
}

// negotiate answers the header lines of a net/http request.
func negotiate(lines []string) deflateAnswer {
	var n negotiation
	for _, l := range lines {
		n.add(scanOffers(l))
	}
	return n.result()
}

// scanOffers reads one line of Sec-WebSocket-Extensions, RFC 6455's
// (section 9.1) list of extensions, each a token with parameters after
// semicolons, each parameter a token with an optional value, a token or a
// quoted string; empty list elements are skipped (RFC 9110, section
// 5.6.1). It returns the answer to the first permessage-deflate offer Gyre
// can honour, and ok false if the line does not follow the grammar.
//
// Offers are tried in the client's order of preference, and RFC 7692
// (section 5) has the server decline one with an unknown parameter, a
// repeated one or an invalid value. Gyre also declines an offer that
// limits its window below 32 KiB, since the compressor always uses the
// whole window.
func scanOffers[T string | []byte](line T) (answer deflateAnswer, ok bool) {
	s := extScanner[T]{s: line}
	for {
		s.skipOWS()
		switch {
		case s.end():
			return answer, true
		case s.s[s.i] == ',':
			s.i++
			continue
		}
		name := s.token()
		if len(name) == 0 {
			return deflateDeclined, false
		}
		o := offer{deflate: string(name) == "permessage-deflate"}
		for {
			s.skipOWS()
			if s.end() || s.s[s.i] == ',' {
				break
			}
			if s.s[s.i] != ';' {
				return deflateDeclined, false
			}
			s.i++
			s.skipOWS()
			attr := s.token()
			if len(attr) == 0 {
				return deflateDeclined, false
			}
			s.skipOWS()
			var v paramValue
			if !s.end() && s.s[s.i] == '=' {
				s.i++
				s.skipOWS()
				if v, ok = s.value(); !ok {
					return deflateDeclined, false
				}
			}
			if o.deflate {
				o.param(paramOf(attr), v)
			}
		}
		if answer == deflateDeclined && o.acceptable() {
			answer = deflateAccepted
			if o.seen&seenServerMaxBits != 0 {
				answer = deflateAcceptedWindow
			}
		}
	}
}

// offer collects one extension offer's parameters while they are scanned.
type offer struct {
	deflate bool
	seen    uint8
	bad     bool
}

// The parameters of permessage-deflate (RFC 7692, section 7.1), as bits of
// offer.seen; 0 is any other.
const (
	seenServerNoContext = 1 << iota
	seenClientNoContext
	seenServerMaxBits
	seenClientMaxBits
)

func paramOf[T string | []byte](attr T) uint8 {
	switch string(attr) {
	case "server_no_context_takeover":
		return seenServerNoContext
	case "client_no_context_takeover":
		return seenClientNoContext
	case "server_max_window_bits":
		return seenServerMaxBits
	case "client_max_window_bits":
		return seenClientMaxBits
	}
	return 0
}

func (o *offer) param(bit uint8, v paramValue) {
	switch bit {
	case seenServerNoContext, seenClientNoContext:
		o.bad = o.bad || v.present
	case seenServerMaxBits:
		// The compressor's window is 32 KiB: only 15 can be honoured.
		o.bad = o.bad || v.windowBits() != 15
	case seenClientMaxBits:
		// Without a value the client only says it would accept a limit;
		// the inflater takes any window, so none is asked for, and a
		// value is the client's own choice.
		o.bad = o.bad || v.present && v.windowBits() == 0
	default:
		o.bad = true
	}
	o.bad = o.bad || o.seen&bit != 0
	o.seen |= bit
}

func (o *offer) acceptable() bool { return o.deflate && !o.bad }

// paramValue is a parameter's value as far as negotiation needs it: the
// max_window_bits values are one or two digits, so longer ones are only
// counted.
type paramValue struct {
	present bool
	token   bool // the value, unquoted, is a token, as RFC 6455 requires
	n       int
	b       [2]byte
}

func (v *paramValue) add(c byte) {
	if v.n < len(v.b) {
		v.b[v.n] = c
	}
	v.n++
	v.token = v.token && isTokenChar(c)
}

// windowBits is the value of a max_window_bits parameter, 8 to 15 written
// without a leading zero (RFC 7692, section 7.1.2), or 0 when it is not
// one.
func (v paramValue) windowBits() int {
	switch {
	case !v.present || !v.token:
		return 0
	case v.n == 1 && v.b[0] >= '8' && v.b[0] <= '9':
		return int(v.b[0] - '0')
	case v.n == 2 && v.b[0] == '1' && v.b[1] >= '0' && v.b[1] <= '5':
		return 10 + int(v.b[1]-'0')
	}
	return 0
}

// extScanner walks a header line.
type extScanner[T string | []byte] struct {
	s T
	i int
}

func (s *extScanner[T]) end() bool { return s.i >= len(s.s) }

func (s *extScanner[T]) skipOWS() {
	for s.i < len(s.s) && (s.s[s.i] == ' ' || s.s[s.i] == '\t') {
		s.i++
	}
}

func (s *extScanner[T]) token() T {
	start := s.i
	for s.i < len(s.s) && isTokenChar(s.s[s.i]) {
		s.i++
	}
	return s.s[start:s.i]
}

// value reads a token or a quoted string, unescaping the latter.
func (s *extScanner[T]) value() (v paramValue, ok bool) {
	v = paramValue{present: true, token: true}
	if s.end() || s.s[s.i] != '"' {
		tok := s.token()
		for i := range len(tok) {
			v.add(tok[i])
		}
		return v, v.n > 0
	}
	for s.i++; s.i < len(s.s); s.i++ {
		c := s.s[s.i]
		switch {
		case c == '"':
			s.i++
			// An empty quoted string is no token.
			v.token = v.token && v.n > 0
			return v, true
		case c == '\\':
			s.i++
			if s.i == len(s.s) || !isQuotedChar(s.s[s.i]) {
				return v, false
			}
			v.add(s.s[s.i])
		case isQuotedChar(c):
			v.add(c)
		default:
			return v, false
		}
	}
	return v, false // no closing quote
}

// isTokenChar reports whether c may be in a token (RFC 9110, section 5.6.2).
func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// isQuotedChar reports whether c may stand in a quoted string, escaped or
// not: tab, space, visible ASCII and obs-text (RFC 9110, section 5.6.4).
func isQuotedChar(c byte) bool {
	return c == '\t' || c >= 0x20 && c != 0x7f
}

// deflateTail ends every compressed message on the wire: the empty stored
// block of a sync flush, which RFC 7692 has the sender strip.
var deflateTail = []byte{0x00, 0x00, 0xff, 0xff}

// compressors keeps compressors by level, index level+2.
var compressors [flate.BestCompression + 3]sync.Pool

// compressor is a pooled deflate writer with the buffer it writes to, so
// that compressing a message allocates nothing.
type compressor struct {
	w   *flate.Writer
	out appender
}

// appender is an io.Writer that appends to b.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// AppendFrame appends payload as one complete server frame for a
// connection that negotiated compression with z: compressed, with RSV1 set,
// when it is at least MinSize bytes and compression makes it shorter, else
// as it is. binary picks the opcode (binary for protobuf connections, text
// for JSON). The frame may be sent to any connection whose Compression is
// z, with [Conn.WriteFrames]. AppendFrame may be called concurrently.
func (z *Compression) AppendFrame(dst []byte, binary bool, payload []byte) []byte {
	op := byte(opText)
	if binary {
		op = opBinary
	}
	if len(payload) < z.MinSize || len(payload) < 8 {
		return appendFrame(dst, op, payload)
	}
	scratch := getBuf(len(payload) + 64)
	out := z.deflate((*scratch)[:0], payload)
	if len(out) >= len(payload) {
		dst = appendFrame(dst, op, payload)
	} else {
		dst = appendFrame(dst, op|rsv1, out)
	}
	*scratch = out
	putBuf(scratch)
	return dst
}

// rsv1 marks the first frame of a compressed message.
const rsv1 = 0x40

// deflate appends payload compressed as one message of permessage-deflate
// with no context takeover.
func (z *Compression) deflate(dst, payload []byte) []byte {
	level := z.level()
	pool := &compressors[level+2]
	c, _ := pool.Get().(*compressor)
	if c == nil {
		c = new(compressor)
		var err error
		if c.w, err = flate.NewWriter(&c.out, level); err != nil {
			panic(fmt.Sprintf("websocket: deflate level %d: %v", level, err)) // level() is in range
		}
	} else {
		c.w.Reset(&c.out) // a fresh stream: no context taken over
	}
	c.out.b = dst
	// Appending does not fail.
	_, _ = c.w.Write(payload)
	_ = c.w.Flush()
	out := c.out.b
	c.out.b = nil // keep no message reachable from the pool
	pool.Put(c)
	return bytes.TrimSuffix(out, deflateTail)
}

// appendFrame appends one final, unmasked frame; op may carry RSV1.
func appendFrame(dst []byte, op byte, payload []byte) []byte {
	var h [maxServerHeader]byte
	n := putHeader(h[:], 0, len(payload))
	h[0] |= op
	dst = append(dst, h[:n]...)
	return append(dst, payload...)
}

// inflateEnd follows a compressed message into the inflater: the sync
// flush block the sender stripped, then an empty final block, so that a
// complete message ends the stream with io.EOF and a truncated one with
// an error.
var inflateEnd = []byte{0x00, 0x00, 0xff, 0xff, 0x01, 0x00, 0x00, 0xff, 0xff}

// inflater is a pooled decompressor with the reader it reads from. It is
// the standard library's: its Reset starts from a clean state, while
// klauspost/compress keeps the previous stream's Huffman tables, which a
// block with an empty tree then decodes with (so a corrupt message read
// differently, or not at all, depending on what the pooled decompressor
// read before; found by FuzzReadMessageEverySplit).
type inflater struct {
	src messageSource
	r   io.ReadCloser
}

var inflaters sync.Pool

// messageSource reads a compressed message and then inflateEnd; it is an
// io.ByteReader so that the inflater reads it without a buffer of its own.
type messageSource struct {
	msg, end []byte
}

func (s *messageSource) Read(p []byte) (int, error) {
	if len(s.msg) > 0 {
		n := copy(p, s.msg)
		s.msg = s.msg[n:]
		return n, nil
	}
	if len(s.end) > 0 {
		n := copy(p, s.end)
		s.end = s.end[n:]
		return n, nil
	}
	return 0, io.EOF
}

func (s *messageSource) ReadByte() (byte, error) {
	if len(s.msg) > 0 {
		b := s.msg[0]
		s.msg = s.msg[1:]
		return b, nil
	}
	if len(s.end) > 0 {
		b := s.end[0]
		s.end = s.end[1:]
		return b, nil
	}
	return 0, io.EOF
}

func getInflater(msg []byte) *inflater {
	f, _ := inflaters.Get().(*inflater)
	if f == nil {
		f = new(inflater)
		f.src = messageSource{msg: msg, end: inflateEnd}
		f.r = stdflate.NewReader(&f.src)
		return f
	}
	f.src = messageSource{msg: msg, end: inflateEnd}
	_ = f.r.(stdflate.Resetter).Reset(&f.src, nil)
	return f
}

func putInflater(f *inflater) {
	f.src = messageSource{}
	inflaters.Put(f)
}
