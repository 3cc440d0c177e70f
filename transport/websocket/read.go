package websocket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/gobwas/ws"
)

const (
	// readBufSize is the largest frame payload read in place, without
	// copying it into a message buffer.
	readBufSize = 1 << minClassShift
	// readStep is how much of a large payload is read before the message
	// buffer grows again.
	readStep = 64 << 10
)

// frameHeader is a parsed client frame header.
type frameHeader struct {
	fin    bool
	op     byte
	rsv1   bool // compressed message (permessage-deflate), first frame only
	length int64
	mask   [4]byte
}

// ReadMessage blocks until the next complete data message and reports
// whether it came in binary frames. Fragments are joined; pings are answered
// with pongs, pongs are dropped, and a close frame is echoed, closes the
// connection and comes back as a *CloseError.
//
// The payload is valid until the next call. After an error every later call
// returns the same error.
func (c *Conn) ReadMessage() (payload []byte, binary bool, err error) {
	payload, binary, compressed, err := c.nextMessage(false)
	if compressed {
		return c.inflateMessage(payload, binary)
	}
	return payload, binary, err
}

// nextMessage is ReadMessage without the inflating of a compressed
// message, which the caller does with inflateMessage; with stopIdle it may
// also give errNoMessage, which is not sticky.
//
// Inflating is apart because it takes more stack than reading: the
// goroutine that reads a connection for ServeReads lives as long as the
// connection and would keep the grown stack while idle, so it leaves the
// inflating to the goroutine that handles the message.
func (c *Conn) nextMessage(stopIdle bool) (payload []byte, binary, compressed bool, err error) {
	if c.rerr != nil {
		return nil, false, false, c.rerr
	}
	c.dropMessage()
	payload, binary, compressed, err = c.readMessage(stopIdle)
	if err == errNoMessage {
		return nil, false, false, err
	}
	if err != nil {
		return nil, false, false, c.failRead(err)
	}
	return payload, binary, compressed, nil
}

// failRead ends reading for good with err.
func (c *Conn) failRead(err error) error {
	c.rerr = c.readError(err)
	c.dropMessage()
	c.in.discard()
	return c.rerr
}

// inflateMessage inflates and checks a compressed message from
// nextMessage. An error ends reading as one from nextMessage does.
func (c *Conn) inflateMessage(p []byte, binary bool) ([]byte, bool, error) {
	p, err := c.inflate(p)
	if err == nil && !binary && !utf8.Valid(p) {
		err = ErrInvalidUTF8
	}
	if err != nil {
		return nil, false, c.failRead(err)
	}
	return p, binary, nil
}

// readMessage reads the next data message, and reports whether it is
// compressed (then it is not checked for UTF-8 yet). With stopIdle it gives
// errNoMessage instead of waiting for the peer when control frames used up
// everything buffered, so a polled connection goes back to its poller.
func (c *Conn) readMessage(stopIdle bool) ([]byte, bool, bool, error) {
	var fragmented, binary, compressed bool
	for {
		h, err := c.readHeader(fragmented)
		if err != nil {
			return nil, false, false, err
		}
		switch {
		case h.op >= opClose:
			if err := c.control(h); err != nil {
				return nil, false, false, err
			}
			if stopIdle && !fragmented && c.in.buffered() == 0 {
				return nil, false, false, errNoMessage
			}
			continue
		case h.op == opContinuation && !fragmented:
			return nil, false, false, protocolError("continuation frame outside a message")
		case h.op != opContinuation && fragmented:
			return nil, false, false, protocolError("data frame inside a fragmented message")
		case h.op != opContinuation:
			binary, compressed = h.op == opBinary, h.rsv1
		}
		limit := c.readLimit
		if compressed {
			limit = compressedLimit(limit)
		}
		if size := int64(len(c.msg)) + h.length; size > limit {
			// A fragmented message may grow past this size: it is what is
			// known when the limit is crossed.
			return nil, false, false, fmt.Errorf("%w: %d bytes, limit %d", ErrMessageTooLarge, size, limit)
		}
		var p []byte
		if h.fin && !fragmented && h.length <= readBufSize {
			p, err = c.readInPlace(h)
		} else {
			p, err = c.readFragment(h)
		}
		if err != nil {
			return nil, false, false, err
		}
		if !h.fin {
			fragmented = true
			continue
		}
		if !compressed && !binary && !utf8.Valid(p) {
			return nil, false, false, ErrInvalidUTF8
		}
		return p, binary, compressed, nil
	}
}

// readHeader reads and checks one frame header. It is where a connection
// waits for its peer, so it first gives back the pooled read buffer if
// nothing is left in it.
func (c *Conn) readHeader(fragmented bool) (frameHeader, error) {
	var h frameHeader
	c.in.release()
	if err := c.in.fill(c.nc, 2); err != nil {
		if fragmented || c.in.buffered() > 0 {
			err = midFrame(err)
		}
		return h, err
	}
	b0, b1 := c.in.buf[c.in.r], c.in.buf[c.in.r+1]
	if rsv := b0 & 0x70; rsv != 0 {
		// RSV1 marks a compressed message, on its first frame only.
		op := b0 & 0x0f
		if rsv != rsv1 || c.deflate == nil || (op != opText && op != opBinary) {
			return h, protocolError("reserved bits set")
		}
		h.rsv1 = true
	}
	if b1&0x80 == 0 {
		return h, protocolError("unmasked client frame")
	}
	size := 2 + 4
	switch b1 & 0x7f {
	case 126:
		size += 2
	case 127:
		size += 8
	}
	if err := c.in.fill(c.nc, size); err != nil {
		return h, midFrame(err)
	}
	b := c.in.buf[c.in.r : c.in.r+size]
	c.in.r += size
	h.fin = b0&0x80 != 0
	h.op = b0 & 0x0f
	switch n := b1 & 0x7f; n {
	case 126:
		h.length = int64(binary.BigEndian.Uint16(b[2:]))
	case 127:
		u := binary.BigEndian.Uint64(b[2:])
		if u>>63 != 0 {
			return h, protocolError("payload length over 63 bits")
		}
		h.length = int64(u)
	default:
		h.length = int64(n)
	}
	copy(h.mask[:], b[size-4:])
	return h, checkOpcode(h)
}

func checkOpcode(h frameHeader) error {
	switch h.op {
	case opContinuation, opText, opBinary:
		return nil
	case opClose, opPing, opPong:
		if !h.fin {
			return protocolError("fragmented control frame")
		}
		if h.length > ws.MaxControlFramePayloadSize {
			return protocolError("control frame over 125 bytes")
		}
		return nil
	}
	return protocolError(fmt.Sprintf("reserved opcode %#x", h.op))
}

// readInPlace returns a whole-message frame's payload unmasked inside the
// read buffer.
func (c *Conn) readInPlace(h frameHeader) ([]byte, error) {
	n := int(h.length)
	if err := c.in.fill(c.nc, n); err != nil {
		return nil, midFrame(err)
	}
	p := c.in.buf[c.in.r : c.in.r+n : c.in.r+n]
	c.in.r += n
	ws.Cipher(p, h.mask, 0)
	return p, nil
}

// readFragment appends a frame's payload to the message buffer and returns
// the message so far. The buffer grows with the bytes that actually arrive,
// not with the length the header announces, so a peer cannot make the
// server reserve ReadLimit bytes by sending a header alone.
func (c *Conn) readFragment(h frameHeader) ([]byte, error) {
	n := int(h.length)
	for done := 0; done < n; {
		step := min(n-done, readStep)
		end := len(c.msg) + step
		c.growMessage(end)
		chunk := c.msg[len(c.msg):end]
		if err := c.in.readFull(c.nc, chunk); err != nil {
			return nil, midFrame(err)
		}
		ws.Cipher(chunk, h.mask, done)
		c.msg = c.msg[:end]
		done += step
	}
	return c.msg, nil
}

// growMessage makes room for n bytes in the message buffer, at least
// doubling it so that long messages are copied a bounded number of times.
func (c *Conn) growMessage(n int) {
	if c.msgBuf != nil && cap(*c.msgBuf) >= n {
		return
	}
	size := n
	if c.msgBuf != nil {
		size = max(n, 2*cap(*c.msgBuf))
	}
	nb := getBuf(size)
	*nb = append((*nb)[:0], c.msg...)
	if c.msgBuf != nil {
		putBuf(c.msgBuf)
	}
	c.msgBuf = nb
	c.msg = *nb
}

// dropMessage gives the message buffers back once its payload is invalid.
func (c *Conn) dropMessage() {
	if c.msgBuf != nil {
		putBuf(c.msgBuf)
		c.msgBuf = nil
	}
	if c.zbuf != nil {
		putBuf(c.zbuf)
		c.zbuf = nil
	}
	c.msg = nil
}

// compressedLimit is the longest a compressed message may be on the wire
// when its inflated size must stay within limit. Incompressible bytes grow
// a little in deflate: 5 bytes for each stored block, which zlib makes as
// small as a few hundred bytes at low memory levels, and a few bytes of
// block headers. What the message inflates to is held to limit itself.
func compressedLimit(limit int64) int64 { return limit + limit/64 + 64 }

// inflate decompresses a message of permessage-deflate into a pooled
// buffer that dropMessage gives back. The output is bounded by the read
// limit as it grows, so a small message that would inflate to gigabytes
// (a decompression bomb) costs at most twice the limit before it is
// refused with ErrMessageTooLarge. The limit is Compression.MaxInflated
// when set, else the read limit.
func (c *Conn) inflate(p []byte) ([]byte, error) {
	f := getInflater(p)
	defer putInflater(f)
	limit := c.readLimit
	if c.deflate != nil && c.deflate.MaxInflated > 0 {
		limit = c.deflate.MaxInflated
	}
	c.zbuf = getBuf(int(min(int64(2*len(p)+readBufSize), limit+1)))
	b := (*c.zbuf)[:0]
	for {
		if len(b) == cap(b) {
			nb := getBuf(2 * cap(b))
			*nb = append((*nb)[:0], b...)
			putBuf(c.zbuf)
			c.zbuf = nb
			b = *nb
		}
		n, err := f.r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > limit {
			return nil, fmt.Errorf("%w: a compressed message of %d bytes inflates past the limit of %d", ErrMessageTooLarge, len(p), limit)
		}
		switch {
		case err == io.EOF:
			*c.zbuf = b
			return b, nil
		case err != nil:
			return nil, protocolError(fmt.Sprintf("compressed message does not inflate: %v", err))
		}
	}
}

// control handles a ping, pong or close frame met while reading.
func (c *Conn) control(h frameHeader) error {
	n := int(h.length)
	if err := c.in.fill(c.nc, n); err != nil {
		return midFrame(err)
	}
	p := c.in.buf[c.in.r : c.in.r+n]
	c.in.r += n
	ws.Cipher(p, h.mask, 0)
	switch h.op {
	case opPing:
		err := c.writeControl(opPong, p)
		if errors.Is(err, ErrClosed) {
			return nil // closing anyway; the reader learns it from the socket
		}
		return err
	case opClose:
		return c.peerClose(p)
	}
	return nil
}

// peerClose echoes a close frame, closes the connection and reports the
// peer's status.
func (c *Conn) peerClose(p []byte) error {
	ce := &CloseError{Code: statusNoStatus}
	switch {
	case len(p) == 1:
		return protocolError("one-byte close payload")
	case len(p) >= 2:
		ce.Code = binary.BigEndian.Uint16(p)
		if !validCloseCode(ce.Code) {
			return protocolError(fmt.Sprintf("close code %d", ce.Code))
		}
		if !utf8.Valid(p[2:]) {
			return ErrInvalidUTF8
		}
		ce.Reason = string(p[2:])
	}
	if err := c.closeWith(ce.Code, ce.Reason); err != nil {
		return fmt.Errorf("websocket: echo close: %w", err)
	}
	return ce
}

// readError gives the caller ErrClosed for reads cut short by a close, and
// puts the package name on socket errors.
func (c *Conn) readError(err error) error {
	var ce *CloseError
	switch {
	case errors.As(err, &ce), errors.Is(err, ErrProtocol), errors.Is(err, ErrMessageTooLarge), err == ErrInvalidUTF8:
		return err
	case c.closeReq.Load() != nil:
		return ErrClosed
	}
	return fmt.Errorf("websocket: read: %w", err)
}
