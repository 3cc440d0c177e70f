package websocket

import (
	"errors"
	"io"
	"net"
)

// smallBufSize is what an idle connection keeps for reading: enough for the
// frames that keep a quiet connection alive (an empty command answering a
// ping is 7 or 8 bytes on the wire), so those never touch the pool.
const smallBufSize = 32

// inbuf buffers bytes read from the socket. It reads into the small array
// embedded in it and moves to a pooled buffer only while a frame does not fit
// there, so a connection waiting for data holds no pooled memory.
type inbuf struct {
	small [smallBufSize]byte
	buf   []byte  // small[:] or the pooled buffer
	big   *[]byte // the pooled buffer, nil when buf is small
	r, w  int     // unread bytes are buf[r:w]
}

func (b *inbuf) init() { b.buf = b.small[:] }

func (b *inbuf) buffered() int { return b.w - b.r }

// room makes buf[r:] at least n bytes long: unread bytes move to the front,
// into a pooled buffer when the current one is too short.
func (b *inbuf) room(n int) {
	if len(b.buf)-b.r >= n {
		return
	}
	if n > len(b.buf) {
		nb := getBuf(n)
		big := (*nb)[:cap(*nb)]
		b.w = copy(big, b.buf[b.r:b.w])
		b.r = 0
		if b.big != nil {
			putBuf(b.big)
		}
		b.big, b.buf = nb, big
		return
	}
	b.w = copy(b.buf, b.buf[b.r:b.w])
	b.r = 0
}

// release rewinds an empty buffer and gives the pooled one back.
func (b *inbuf) release() {
	if b.r != b.w {
		return
	}
	b.r, b.w = 0, 0
	if b.big != nil {
		putBuf(b.big)
		b.big = nil
		b.buf = b.small[:]
	}
}

// discard drops whatever is buffered, for a connection that reads no more.
func (b *inbuf) discard() {
	b.r = b.w
	b.release()
}

// fill reads until at least n bytes (n <= the pooled buffer size) are
// buffered.
func (b *inbuf) fill(nc net.Conn, n int) error {
	if b.buffered() >= n {
		return nil
	}
	b.room(n)
	for b.buffered() < n {
		m, err := nc.Read(b.buf[b.w:])
		b.w += m
		if err != nil {
			if b.buffered() >= n {
				return nil
			}
			return err
		}
	}
	return nil
}

// readFull fills dst with buffered bytes first, then straight from the
// socket, so a large payload is copied once.
func (b *inbuf) readFull(nc net.Conn, dst []byte) error {
	k := copy(dst, b.buf[b.r:b.w])
	b.r += k
	if k == len(dst) {
		return nil
	}
	_, err := io.ReadFull(nc, dst[k:])
	return err
}

// preload puts bytes that were read before the Conn existed in front.
func (b *inbuf) preload(p []byte) {
	b.room(b.buffered() + len(p))
	b.w += copy(b.buf[b.w:], p)
}

// midFrame turns a clean end of stream inside a frame into
// io.ErrUnexpectedEOF.
func midFrame(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
