// Package frontdoor sorts the connections of a listener by their first
// HTTP request before net/http sees them: a WebSocket handshake for one
// path goes straight to a handler that answers it without net/http, and
// every other connection is passed on, unread, to an http.Server through
// the Listener's Accept.
//
// Sorting looks at the first request with MSG_PEEK, which leaves the bytes
// in the socket: a connection passed on is exactly the one accepted (a
// *net.TCPConn, nothing read from it), so net/http and the handlers behind
// it see no difference. Only a handshake that arrived whole in the first
// segment, with CRLF line ends and in at most PeekSize bytes, is taken;
// anything else, a handshake split over packets included, goes to net/http,
// which serves it as well, only at a higher cost. Where peeking is not
// available (systems other than Linux and the BSDs), every connection goes
// to net/http.
package frontdoor

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/gyrehq/gyre/internal/stackgrow"
)

// PeekSize is the most of a request that is looked at, and so the largest
// request head that is taken (browsers send cookies with a handshake).
const PeekSize = 4096

// DefaultHeadTimeout is how long a new connection may take to send its
// first request when Config.HeadTimeout is zero.
const DefaultHeadTimeout = 10 * time.Second

// Config says which connections to take and what to do with them.
type Config struct {
	// Path is the request path whose GET requests are taken: exactly this
	// path, with or without a query.
	Path string

	// Upgrade takes over a connection whose request head, a GET of Path up
	// to and including the blank line ending its headers, was read from it.
	// It runs on the connection's own goroutine, and head is valid only
	// until it returns.
	Upgrade func(nc net.Conn, head []byte)

	// HeadTimeout bounds the wait for a new connection's first request; a
	// connection that sends nothing in time is closed, as net/http would
	// with its ReadHeaderTimeout. Zero means DefaultHeadTimeout.
	HeadTimeout time.Duration

	// Logger gets accept errors; nil logs nothing.
	Logger *slog.Logger
}

// Listener accepts from a listener, takes the handshakes Config selects and
// yields every other connection from Accept. Close closes the listener it
// was made with.
type Listener struct {
	ln     net.Listener
	cfg    Config
	prefix []byte // "GET " + Path

	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	err   error // why accepting ended; set before done is closed

	// waiting holds the connections not yet sorted, which Close closes;
	// closed is set once it has.
	mu      sync.Mutex
	waiting map[net.Conn]struct{}
	closed  bool
}

// New starts accepting from ln.
func New(ln net.Listener, cfg Config) *Listener {
	if cfg.HeadTimeout <= 0 {
		cfg.HeadTimeout = DefaultHeadTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Listener{
		ln:      ln,
		cfg:     cfg,
		prefix:  []byte("GET " + cfg.Path),
		conns:   make(chan net.Conn),
		done:    make(chan struct{}),
		waiting: make(map[net.Conn]struct{}),
	}
	go l.acceptLoop()
	return l
}

// Accept returns the next connection that was not taken.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case nc := <-l.conns:
		return nc, nil
	case <-l.done:
		return nil, l.err
	}
}

// Close stops accepting and closes the listener and the connections still
// waiting to send their first request. Connections already taken or
// passed on are not touched.
func (l *Listener) Close() error {
	err := l.ln.Close()
	l.stop(net.ErrClosed)
	l.mu.Lock()
	l.closed = true
	for nc := range l.waiting {
		_ = nc.Close()
	}
	clear(l.waiting)
	l.mu.Unlock()
	return err
}

// wait records nc as waiting for its first request; false once the
// listener is closed.
func (l *Listener) wait(nc net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.waiting[nc] = struct{}{}
	return true
}

// waited ends what wait began: Close no longer closes nc.
func (l *Listener) waited(nc net.Conn) {
	l.mu.Lock()
	delete(l.waiting, nc)
	l.mu.Unlock()
}

// Addr is the listener's address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

func (l *Listener) stop(err error) {
	l.once.Do(func() {
		l.err = err
		close(l.done)
	})
}

// Backoff after an accept error that may pass (out of descriptors), as
// net/http does it.
const (
	minBackoff = 5 * time.Millisecond
	maxBackoff = time.Second
)

func (l *Listener) acceptLoop() {
	var delay time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			if !temporary(err) {
				l.stop(err)
				return
			}
			delay = min(max(2*delay, minBackoff), maxBackoff)
			l.cfg.Logger.Warn("accept failed, retrying", "error", err, "retry_in", delay)
			select {
			case <-time.After(delay):
			case <-l.done:
				return
			}
			continue
		}
		delay = 0
		go l.sort(nc)
	}
}

// temporary tells an accept error that may pass, such as running out of
// file descriptors, from one that ends the listener.
func temporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

var peekBufs = sync.Pool{New: func() any { b := make([]byte, PeekSize); return &b }}

// sort waits for the connection's first request and either takes it or
// passes the connection on.
func (l *Listener) sort(nc net.Conn) {
	// The WebSocket handshake goes deeper than a new goroutine's stack.
	stackgrow.Grow()
	if !l.wait(nc) {
		_ = nc.Close()
		return
	}
	bp := peekBufs.Get().(*[]byte)
	defer peekBufs.Put(bp)
	buf := *bp
	_ = nc.SetReadDeadline(time.Now().Add(l.cfg.HeadTimeout))
	n, err := peek(nc, buf)
	l.waited(nc)
	switch {
	case errors.Is(err, errNoPeek):
		l.pass(nc)
		return
	case err != nil:
		// Gone, silent for HeadTimeout (net/http would close it too), or
		// closed by Close.
		_ = nc.Close()
		return
	}
	head := l.handshake(buf[:n])
	if head == 0 {
		l.pass(nc)
		return
	}
	// Consume the head; what the client sent behind it stays unread.
	if _, err := io.ReadFull(nc, buf[:head]); err != nil {
		_ = nc.Close()
		return
	}
	_ = nc.SetReadDeadline(time.Time{})
	l.cfg.Upgrade(nc, buf[:head])
}

// handshake returns the length of the request head at the start of b when
// it is a GET of the taken path and b holds all of it, else 0.
func (l *Listener) handshake(b []byte) int {
	if !bytes.HasPrefix(b, l.prefix) || len(b) == len(l.prefix) {
		return 0
	}
	if c := b[len(l.prefix)]; c != ' ' && c != '?' {
		return 0
	}
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		return 0
	}
	return end + 4
}

// pass hands nc to Accept, or closes it once the listener is closed.
func (l *Listener) pass(nc net.Conn) {
	_ = nc.SetReadDeadline(time.Time{})
	select {
	case l.conns <- nc:
	case <-l.done:
		_ = nc.Close()
	}
}
