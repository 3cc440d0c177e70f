package websocket

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gyrehq/gyre/protocol"
)

// Frame opcodes (RFC 6455, section 5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

// Conn is an upgraded WebSocket connection. See the package documentation
// for which methods may run concurrently.
type Conn struct {
	nc       net.Conn
	format   protocol.Type
	dataOp   byte
	vectored bool // nc turns net.Buffers into one writev
	// raw is the socket TryWriteFrame writes to, nil when it cannot.
	raw          syscall.RawConn
	readLimit    int64
	writeTimeout time.Duration

	// Read side, owned by the goroutine calling ReadMessage.
	in     inbuf
	msgBuf *[]byte // pooled storage behind msg, nil when unused
	msg    []byte  // the message being assembled from fragments
	zbuf   *[]byte // pooled storage of the inflated message, nil when unused
	rerr   error   // sticky: reading stops at the first error

	// deflate is the compression negotiated at the upgrade, nil without.
	// Both directions are without context takeover, so it holds no state
	// of this connection.
	deflate *Compression

	// Write side, under wmu.
	wmu   sync.Mutex
	whdr  [maxServerHeader]byte
	wvec  [2][]byte
	wbufs net.Buffers
	werr  error // sticky: a failed write may have left half a frame
	// pending is what TryWriteFrame could not write of a frame; it goes
	// out before anything else.
	pending *[]byte
	wclosed bool // the close frame went out (or could not) and nc is closed

	closeReq atomic.Pointer[closeRequest] // set once, by the first closer
	closed   atomic.Bool                  // mirrors wclosed for lock-free checks

	poll atomic.Pointer[pollReg] // set by ServeReads on a polled connection
}

func newConn(nc net.Conn, format protocol.Type, opts Options) *Conn {
	c := &Conn{
		nc:           nc,
		format:       format,
		dataOp:       opText,
		readLimit:    opts.readLimit(),
		writeTimeout: opts.writeTimeout(),
	}
	if format == protocol.TypeProtobuf {
		c.dataOp = opBinary
	}
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
		c.vectored = true
		c.raw = rawOf(nc)
	}
	c.in.init()
	return c
}

// Compression is what the connection negotiated permessage-deflate with,
// nil when it did not: its frames are made with [Compression.AppendFrame]
// and sent with WriteFrames.
func (c *Conn) Compression() *Compression { return c.deflate }

// Protocol is the wire format chosen at Upgrade.
func (c *Conn) Protocol() protocol.Type { return c.format }

// RemoteAddr is the peer's network address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }
