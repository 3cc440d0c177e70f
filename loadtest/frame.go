package loadtest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"

	"github.com/gobwas/ws"
)

// maxMessage bounds one server message (all its fragments), so that a
// broken peer cannot make a worker allocate without limit.
const maxMessage = 64 << 20

var errMasked = errors.New("loadtest: masked frame from the server")

// frameHeader is a WebSocket frame header as a server sends it (never
// masked). gobwas/ws's ReadHeader allocates its scratch slice on every
// call; this reads straight out of the connection's buffer.
type frameHeader struct {
	fin  bool
	rsv1 bool // compressed, on the first frame of a message
	op   ws.OpCode
	// size is the header's own length, length the payload's.
	size   int
	length int64
}

func readHeader(br *bufio.Reader) (frameHeader, error) {
	b, err := br.Peek(2)
	if err != nil {
		return frameHeader{}, err
	}
	h := frameHeader{fin: b[0]&0x80 != 0, rsv1: b[0]&0x40 != 0, op: ws.OpCode(b[0] & 0x0f), size: 2, length: int64(b[1] & 0x7f)}
	if b[1]&0x80 != 0 {
		return h, errMasked
	}
	if b[0]&0x30 != 0 {
		return h, errors.New("loadtest: frame with reserved bits RSV2 or RSV3 (no extension uses them)")
	}
	_, _ = br.Discard(2)
	switch h.length {
	case 126:
		ext, err := br.Peek(2)
		if err != nil {
			return h, err
		}
		h.length = int64(binary.BigEndian.Uint16(ext))
		h.size += 2
		_, _ = br.Discard(2)
	case 127:
		ext, err := br.Peek(8)
		if err != nil {
			return h, err
		}
		h.length = int64(binary.BigEndian.Uint64(ext) & (1<<63 - 1))
		h.size += 8
		_, _ = br.Discard(8)
	}
	if h.length > maxMessage {
		return h, fmt.Errorf("loadtest: frame of %d bytes", h.length)
	}
	return h, nil
}

// bufPool holds message buffers: a connection takes one only once a
// message has begun to arrive, so idle connections hold none.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooled keeps a rare huge message from pinning its buffer.
const maxPooled = 1 << 20

func putBuf(bp *[]byte) {
	if cap(*bp) <= maxPooled {
		*bp = (*bp)[:0]
		bufPool.Put(bp)
	}
}

// readState is what a connection's reads keep: its half of
// permessage-deflate when negotiated, and what it has received. Only the
// reading goroutine touches it.
type readState struct {
	z *inflateState // nil: no compression negotiated
	traffic
}

// traffic counts what connections received after their handshakes.
type traffic struct {
	// Wire is every frame's bytes, header included, as received.
	Wire int64 `json:"wire"`
	// Payload is the data messages' bytes after inflation.
	Payload int64 `json:"payload"`
	// Messages counts data messages; Compressed those that came
	// compressed.
	Messages   int64 `json:"messages"`
	Compressed int64 `json:"compressed"`
}

func (t *traffic) add(o traffic) {
	t.Wire += o.Wire
	t.Payload += o.Payload
	t.Messages += o.Messages
	t.Compressed += o.Compressed
}

var (
	errUnexpectedRSV1 = errors.New("loadtest: frame with reserved bit RSV1 (compressed) but no compression negotiated")
	errRSV1Misplaced  = errors.New("loadtest: RSV1 (compressed) on a control or continuation frame")
)

// readMessage reads one data message, joining its fragments into a
// pooled buffer (returned to the caller, who gives it back with putBuf)
// and handing control frames that arrive before or between them to
// control. A compressed message is inflated: the buffer holds its
// content. It returns the opcode of the first frame.
func readMessage(br *bufio.Reader, control func(op ws.OpCode, payload []byte) error, rs *readState) (ws.OpCode, *[]byte, error) {
	var op ws.OpCode
	var bp *[]byte
	compressed := false
	fail := func(err error) (ws.OpCode, *[]byte, error) {
		if bp != nil {
			putBuf(bp)
		}
		return 0, nil, err
	}
	for {
		h, err := readHeader(br)
		if err != nil {
			return fail(err)
		}
		rs.Wire += int64(h.size) + h.length
		if h.op.IsControl() {
			if h.rsv1 {
				return fail(errRSV1Misplaced)
			}
			if err := readControl(br, h, control); err != nil {
				return fail(err)
			}
			continue
		}
		if (h.op == ws.OpContinuation) == (op == 0) {
			return fail(errors.New("loadtest: fragments out of order"))
		}
		if op == 0 {
			op = h.op
			bp = bufPool.Get().(*[]byte)
			if compressed = h.rsv1; compressed && rs.z == nil {
				return fail(errUnexpectedRSV1)
			}
		} else if h.rsv1 {
			return fail(errRSV1Misplaced)
		}
		n := len(*bp)
		if int64(n)+h.length > maxMessage {
			return fail(errors.New("loadtest: message too large"))
		}
		*bp = grow(*bp, n+int(h.length))
		if _, err := io.ReadFull(br, (*bp)[n:]); err != nil {
			return fail(err)
		}
		if !h.fin {
			continue
		}
		if compressed {
			out, err := rs.z.inflate(bp)
			if err != nil {
				return fail(err)
			}
			putBuf(bp)
			bp = out
			rs.Compressed++
		}
		rs.Messages++
		rs.Payload += int64(len(*bp))
		return op, bp, nil
	}
}

func readControl(br *bufio.Reader, h frameHeader, control func(op ws.OpCode, payload []byte) error) error {
	var small [125]byte
	if h.length > int64(len(small)) || !h.fin {
		return errors.New("loadtest: bad control frame")
	}
	p := small[:h.length]
	if _, err := io.ReadFull(br, p); err != nil {
		return err
	}
	return control(h.op, p)
}

func grow(b []byte, n int) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}

// appendClientFrame appends a single masked frame, as a client must send.
func appendClientFrame(dst []byte, op ws.OpCode, payload []byte) []byte {
	dst = append(dst, 0x80|byte(op))
	switch n := len(payload); {
	case n < 126:
		dst = append(dst, 0x80|byte(n))
	case n <= 0xffff:
		dst = append(dst, 0x80|126, byte(n>>8), byte(n))
	default:
		dst = append(dst, 0x80|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	var mask [4]byte
	binary.LittleEndian.PutUint32(mask[:], rand.Uint32())
	dst = append(dst, mask[:]...)
	start := len(dst)
	dst = append(dst, payload...)
	ws.Cipher(dst[start:], mask, 0)
	return dst
}
