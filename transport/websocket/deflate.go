package websocket

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/gobwas/httphead"
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
	// range means 1.
	Level int
	// MinSize is the smallest message, in bytes, that is compressed;
	// shorter ones go as they are.
	MinSize int
}

// extensionAnswer is the one answer Gyre gives an acceptable offer.
const extensionAnswer = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"

func (z *Compression) level() int {
	if z.Level < flate.HuffmanOnly || z.Level > flate.BestCompression {
		return flate.BestSpeed
	}
	return z.Level
}

// acceptsOffers reports whether the Sec-WebSocket-Extensions header lines
// hold a permessage-deflate offer Gyre can honour, reading them as RFC 7692
// (section 5) asks: offers are tried in the client's order of preference,
// and one with an unknown parameter, a repeated one or an invalid value is
// declined, as is one that limits the server's window below 32 KiB (the
// compressor always uses the whole window). A header that does not parse
// is declined whole: the connection goes uncompressed, which every client
// supports.
func acceptsOffers[T string | []byte](lines []T) bool {
	for _, line := range lines {
		if acceptsOffer([]byte(line)) {
			return true
		}
	}
	return false
}

// offer collects one extension offer's parameters while they are scanned.
type offer struct {
	deflate bool
	seen    uint8
	bad     bool
}

const (
	seenServerNoContext = 1 << iota
	seenClientNoContext
	seenServerMaxBits
	seenClientMaxBits
)

func (o *offer) param(attr, val []byte) {
	var bit uint8
	switch string(attr) {
	case "server_no_context_takeover":
		bit = seenServerNoContext
		o.bad = o.bad || len(val) > 0
	case "client_no_context_takeover":
		bit = seenClientNoContext
		o.bad = o.bad || len(val) > 0
	case "server_max_window_bits":
		bit = seenServerMaxBits
		// The compressor's window is 32 KiB: only 15 can be honoured.
		o.bad = o.bad || windowBits(val) != 15
	case "client_max_window_bits":
		bit = seenClientMaxBits
		// Without a value the client only says it would accept a limit;
		// the inflater takes any window, so none is asked for.
		o.bad = o.bad || len(val) > 0 && windowBits(val) == 0
	default:
		o.bad = true
	}
	o.bad = o.bad || o.seen&bit != 0
	o.seen |= bit
}

func (o *offer) acceptable() bool { return o.deflate && !o.bad }

func acceptsOffer(line []byte) bool {
	var cur offer
	index := -1
	accepted := false
	ok := httphead.ScanOptions(line, func(i int, name, attr, val []byte) httphead.Control {
		if i != index {
			if cur.acceptable() {
				accepted = true
				return httphead.ControlBreak
			}
			index = i
			cur = offer{deflate: string(name) == "permessage-deflate"}
		}
		if attr != nil && cur.deflate {
			cur.param(attr, val)
		}
		return httphead.ControlContinue
	})
	if !ok {
		return false
	}
	return accepted || cur.acceptable()
}

// windowBits is the value of a max_window_bits parameter, 8 to 15, or 0
// when it is not one.
func windowBits(val []byte) int {
	n, err := strconv.Atoi(string(val))
	if err != nil || n < 8 || n > 15 || len(val) > 2 {
		return 0
	}
	return n
}

// deflateTail ends every compressed message on the wire: the empty stored
// block of a sync flush, which RFC 7692 has the sender strip.
var deflateTail = []byte{0x00, 0x00, 0xff, 0xff}

// compressors keeps deflate writers by level, index level+2.
var compressors [flate.BestCompression + 3]sync.Pool

// AppendFrame appends payload as one complete server frame for a
// connection that negotiated compression with z: compressed, with RSV1 set,
// when it is at least MinSize bytes and compression makes it shorter, else
// as it is. binary picks the opcode (binary for protobuf connections, text
// for JSON). The frame may be sent to any connection whose Compression is
// z, with [Conn.WriteFrames].
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
	buf := bytes.NewBuffer(dst)
	fw, _ := pool.Get().(*flate.Writer)
	if fw == nil {
		var err error
		if fw, err = flate.NewWriter(buf, level); err != nil {
			panic(fmt.Sprintf("websocket: deflate level %d: %v", level, err)) // level() is in range
		}
	} else {
		fw.Reset(buf)
	}
	// Writes to a bytes.Buffer do not fail.
	_, _ = fw.Write(payload)
	_ = fw.Flush()
	fw.Reset(io.Discard) // let go of the buffer
	pool.Put(fw)
	out := buf.Bytes()
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

// inflater is a pooled decompressor with the reader it reads from.
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
		f.r = flate.NewReader(&f.src)
		return f
	}
	f.src = messageSource{msg: msg, end: inflateEnd}
	_ = f.r.(flate.Resetter).Reset(&f.src, nil)
	return f
}

func putInflater(f *inflater) {
	f.src = messageSource{}
	inflaters.Put(f)
}
