package sdk

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
)

// wireTap is a client's dialer that reads what the server sends on each
// connection as it comes off the socket: the handshake response, then every
// frame (RSV1 set or not, its size) and the message it carries, inflated on
// its own when compressed. It shows what the SDK hides: whether messages
// really travelled compressed and how many bytes they took. What the client
// writes is read the same way (unmasked).
//
// Each compressed message is inflated by a fresh inflater: gyre negotiates
// no context takeover both ways, so a message that needs an earlier one's
// window fails here, and the tap records the error.
type wireTap struct {
	mu    sync.Mutex
	conns []*tappedConn
}

func (w *wireTap) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := newTappedConn()
	tc.fromClient = newTappedConn()
	w.mu.Lock()
	w.conns = append(w.conns, tc)
	w.mu.Unlock()
	return &tapConn{Conn: c, tap: tc}, nil
}

// connections returns the connections dialled so far.
func (w *wireTap) connections() []*tappedConn {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*tappedConn(nil), w.conns...)
}

type tapConn struct {
	net.Conn
	tap *tappedConn
}

func (c *tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.tap.feed(p[:n])
	return n, err
}

func (c *tapConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.tap.fromClient.feed(p[:n])
	return n, err
}

// wireMessage is one data message the server sent.
type wireMessage struct {
	compressed bool   // RSV1 on its first frame
	wireBytes  int    // its frames on the wire, headers included
	data       []byte // as the application sees it: inflated
	err        error  // why it did not inflate
}

// tappedConn is what the server sent on one connection. Its fromClient is
// what the client wrote: headers then are the handshake request's, and
// status empty.
type tappedConn struct {
	fromClient *tappedConn

	mu      sync.Mutex
	buf     []byte
	shaken  bool
	status  string
	headers map[string]string // of the handshake, names in lower case
	msgs    []wireMessage
	// compressedControl counts control frames with RSV1, which RFC 7692
	// forbids.
	compressedControl int
	partial           *wireMessage
	parts             [][]byte
}

func newTappedConn() *tappedConn {
	return &tappedConn{headers: map[string]string{}}
}

func (c *tappedConn) feed(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = append(c.buf, p...)
	if !c.shaken && !c.readHandshake() {
		return
	}
	for c.readFrame() {
	}
}

// snapshot returns the handshake status, the extension answered and the
// messages so far.
func (c *tappedConn) snapshot() (status, extensions string, msgs []wireMessage, compressedControl int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status, c.headers["sec-websocket-extensions"], append([]wireMessage(nil), c.msgs...), c.compressedControl
}

func (c *tappedConn) readHandshake() bool {
	end := bytes.Index(c.buf, []byte("\r\n\r\n"))
	if end < 0 {
		return false
	}
	lines := strings.Split(string(c.buf[:end]), "\r\n")
	if f := strings.Fields(lines[0]); len(f) > 1 && strings.HasPrefix(f[0], "HTTP/") {
		c.status = f[1]
	}
	for _, l := range lines[1:] {
		if name, value, ok := strings.Cut(l, ":"); ok {
			c.headers[strings.ToLower(strings.TrimSpace(name))] = strings.TrimSpace(value)
		}
	}
	c.buf = append([]byte(nil), c.buf[end+4:]...)
	c.shaken = true
	return true
}

// readFrame takes one whole frame off the buffer, or returns false.
func (c *tappedConn) readFrame() bool {
	b := c.buf
	if len(b) < 2 {
		return false
	}
	fin, rsv1, op := b[0]&0x80 != 0, b[0]&0x40 != 0, b[0]&0x0f
	n, head := int(b[1]&0x7f), 2
	switch n {
	case 126:
		if len(b) < 4 {
			return false
		}
		n, head = int(binary.BigEndian.Uint16(b[2:])), 4
	case 127:
		if len(b) < 10 {
			return false
		}
		n, head = int(binary.BigEndian.Uint64(b[2:])), 10
	}
	masked := b[1]&0x80 != 0
	if masked {
		head += 4 // a client's frames are masked, a server's not
	}
	if len(b) < head+n {
		return false
	}
	payload := append([]byte(nil), b[head:head+n]...)
	if masked {
		key := b[head-4 : head]
		for i := range payload {
			payload[i] ^= key[i%4]
		}
	}
	c.buf = b[head+n:]
	if op >= 0x8 {
		if rsv1 {
			c.compressedControl++
		}
		return true
	}
	if op != 0 {
		c.partial, c.parts = &wireMessage{compressed: rsv1}, nil
	}
	if c.partial == nil {
		return true // a continuation without a start
	}
	c.partial.wireBytes += head + n
	c.parts = append(c.parts, payload)
	if fin {
		m := *c.partial
		m.data = bytes.Join(c.parts, nil)
		if m.compressed {
			m.data, m.err = inflate(m.data)
		}
		c.msgs = append(c.msgs, m)
		c.partial, c.parts = nil, nil
	}
	return true
}

// inflateEnd follows a message into the inflater: the sync flush block the
// sender strips, then an empty final block, so that a whole message ends
// the stream cleanly and a truncated one does not.
var inflateEnd = []byte{0x00, 0x00, 0xff, 0xff, 0x01, 0x00, 0x00, 0xff, 0xff}

func inflate(raw []byte) ([]byte, error) {
	r := flate.NewReader(io.MultiReader(bytes.NewReader(raw), bytes.NewReader(inflateEnd)))
	defer r.Close()
	return io.ReadAll(r)
}
