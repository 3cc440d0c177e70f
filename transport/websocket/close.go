package websocket

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
	"unicode/utf8"
)

// Close codes with a meaning inside this package.
const (
	statusNoStatus = 1005 // received close frame without payload
	maxCloseReason = 123  // 125 bytes of control payload minus the code
)

// closeRequest is what the first closer asked for.
type closeRequest struct {
	code   uint16
	reason string
}

// Close sends a close frame with code and reason, then closes the
// connection. The reason is cut to 123 bytes on a character boundary; a code
// that may not be sent (0, 1005, 1006, 1015, outside 1000-4999) sends a close
// frame without status.
//
// Close is idempotent and safe to call at any time. If a write is in flight,
// Close returns at once and the writer sends the close frame and closes the
// connection when its write ends, at most WriteTimeout later; so Close never
// waits behind a slow peer longer than one write timeout. The rest of a
// frame TryWriteFrame could not complete goes before the close frame,
// within a write timeout of its own.
func (c *Conn) Close(code uint16, reason string) error {
	return c.closeWith(code, reason)
}

func (c *Conn) closeWith(code uint16, reason string) error {
	req := &closeRequest{code: code, reason: reason}
	if !c.closeReq.CompareAndSwap(nil, req) {
		return nil
	}
	if r := c.poll.Load(); r != nil {
		r.stop()
	}
	if !c.wmu.TryLock() {
		return nil // the holder finishes the close in unlockWrite
	}
	err := c.finishCloseLocked()
	c.wmu.Unlock()
	return err
}

// unlockWrite releases wmu and, if a Close came in meanwhile, finishes it.
// Close stores its request before trying the lock, and a holder looks for
// the request after unlocking, so one of them always sees the other.
func (c *Conn) unlockWrite() {
	c.wmu.Unlock()
	if c.closeReq.Load() != nil && !c.closed.Load() && c.wmu.TryLock() {
		_ = c.finishCloseLocked()
		c.wmu.Unlock()
	}
}

// finishCloseLocked writes the close frame, unless a failed write left the
// stream broken, and closes the socket. It runs once, under wmu.
func (c *Conn) finishCloseLocked() error {
	if c.wclosed {
		return nil
	}
	c.wclosed = true
	defer c.closed.Store(true)
	var werr error
	if c.werr == nil {
		// The rest of a frame TryWriteFrame left must not be cut off by
		// the close frame.
		werr = c.flushLocked()
	}
	if werr == nil && c.werr == nil {
		req := c.closeReq.Load()
		frame := closeFrame(req.code, req.reason)
		c.setWriteDeadline()
		if _, err := c.nc.Write(frame); err != nil {
			werr = fmt.Errorf("websocket: write close frame: %w", err)
		}
	}
	if werr == nil && c.werr == nil && c.lingerClose() {
		return nil
	}
	if err := c.closeSocket(); err != nil {
		return errors.Join(werr, fmt.Errorf("websocket: close: %w", err))
	}
	return werr
}

// closeLinger is how long a closed connection keeps reading (and
// discarding) what the peer still sends before the socket is released.
const closeLinger = time.Second

// lingerClose ends the connection gracefully once the close frame is
// written: it half-closes the socket (the peer reads the close frame and
// then EOF) and discards what the peer still sends until it closes too, or
// closeLinger passes. Closing a socket with unread input at once makes the
// kernel answer with a reset, which can destroy the close frame before the
// peer reads it. It reports false when the socket cannot half-close.
func (c *Conn) lingerClose() bool {
	hc, ok := c.nc.(interface{ CloseWrite() error })
	if !ok || hc.CloseWrite() != nil {
		return false
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(closeLinger))
	go func() {
		_, _ = io.Copy(io.Discard, c.nc)
		_ = c.nc.Close()
	}()
	return true
}

// closeSocket closes the connection. After a failed write a TLS connection
// may have sent half a record, and its closing alert would read as garbage to
// the peer, so the socket under it is closed instead.
func (c *Conn) closeSocket() error {
	if wrapped, ok := c.nc.(interface{ NetConn() net.Conn }); ok && c.werr != nil {
		return wrapped.NetConn().Close()
	}
	return c.nc.Close()
}

// closeFrame builds a whole close frame.
func closeFrame(code uint16, reason string) []byte {
	if !validCloseCode(code) {
		return []byte{0x80 | opClose, 0}
	}
	reason = truncateReason(strings.ToValidUTF8(reason, "\uFFFD"))
	f := make([]byte, 4, 4+len(reason))
	f[0] = 0x80 | opClose
	f[1] = byte(2 + len(reason))
	f[2], f[3] = byte(code>>8), byte(code)
	return append(f, reason...)
}

// truncateReason cuts s to maxCloseReason bytes without splitting a rune.
func truncateReason(s string) string {
	if len(s) <= maxCloseReason {
		return s
	}
	i := maxCloseReason
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// validCloseCode reports whether a close frame may carry code (RFC 6455,
// section 7.4, and the IANA registry).
func validCloseCode(code uint16) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}
