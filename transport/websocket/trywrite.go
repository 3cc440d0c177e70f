package websocket

import "errors"

// FrameHeaderRoom is the room TryWriteFrame needs before a payload for
// the frame's header.
const FrameHeaderRoom = maxServerHeader

// CanTryWrite reports whether TryWriteFrame writes on this connection: a
// plain TCP or Unix socket, on a system where it is implemented, without
// compression (whose frames are made once for many connections and sent
// with WriteFrames).
func (c *Conn) CanTryWrite() bool { return c.raw != nil && c.deflate == nil }

// ErrWriteBusy is TryWriteFrame's answer when another write of the
// connection is under way (a pong, a close, the rest of an earlier
// frame): it wrote nothing, and the frame is to be sent with a call that
// may wait.
var ErrWriteBusy = errors.New("websocket: another write is under way")

// TryWriteFrame sends buf[FrameHeaderRoom:] as one data frame, as
// WriteFrame would, but without waiting, so that one goroutine can write
// to many connections in turn without a stalled one holding up the
// others. The header goes into the room before the payload, and frame
// and header leave in one write call, with no write deadline to set.
//
// It reports whether the socket took the whole frame. When it did not
// (a full send buffer), the rest is kept, and FlushFrame must then be
// called, from a goroutine that may wait, before more is written;
// every other write of the connection sends that rest first as well.
// When another write is under way it writes nothing and returns
// ErrWriteBusy. The one wait left: a Close that arrives during the call
// is finished by it, sending the close frame within WriteTimeout.
// Only with CanTryWrite.
func (c *Conn) TryWriteFrame(buf []byte) (complete bool, err error) {
	payload := buf[FrameHeaderRoom:]
	if !c.wmu.TryLock() {
		return false, ErrWriteBusy
	}
	defer c.unlockWrite()
	if c.pending != nil {
		return false, ErrWriteBusy
	}
	if err := c.writable(); err != nil {
		return false, err
	}
	var hdr [maxServerHeader]byte
	n := putHeader(hdr[:], c.dataOp, len(payload))
	frame := buf[FrameHeaderRoom-n:]
	copy(frame, hdr[:n])
	written, err := c.writeNow(frame)
	if err != nil {
		return false, c.wrote(err)
	}
	if written == len(frame) {
		return true, nil
	}
	rest := getBuf(len(frame) - written)
	*rest = append((*rest)[:0], frame[written:]...)
	c.pending = rest
	return false, nil
}

// FlushFrame writes what TryWriteFrame left of a frame, waiting for the
// socket as WriteFrame does (within Options.WriteTimeout).
func (c *Conn) FlushFrame() error {
	c.wmu.Lock()
	defer c.unlockWrite()
	if c.wclosed {
		return ErrClosed
	}
	if c.werr != nil {
		return c.werr
	}
	return c.flushLocked()
}

// flushLocked writes the rest of a frame TryWriteFrame left, if any,
// under wmu: before anything else goes out, or the peer would read the
// next frame's bytes as this one's.
func (c *Conn) flushLocked() error {
	if c.pending == nil {
		return nil
	}
	rest := c.pending
	c.pending = nil
	c.setWriteDeadline()
	_, err := c.nc.Write(*rest)
	putBuf(rest)
	return c.wrote(err)
}
