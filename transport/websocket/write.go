package websocket

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"time"
	"unsafe"
)

// maxServerHeader is the longest header of an unmasked frame.
const maxServerHeader = 10

// WriteFrame sends payload as one data frame, text on a JSON connection and
// binary on a protobuf one. Header and payload leave in one write call. It
// may run concurrently with ReadMessage and Close; concurrent writers are
// serialised. Each write is bounded by Options.WriteTimeout; after a failed
// write the connection only accepts Close.
func (c *Conn) WriteFrame(payload []byte) error {
	if c.deflate != nil {
		return c.writeCompressed(payload)
	}
	c.wmu.Lock()
	err := c.writeFrameLocked(c.dataOp, payload)
	c.unlockWrite()
	return err
}

// WriteFrameParts sends the concatenation of parts as one data frame and one
// write call, so that messages encoded once for many connections (each with
// its own separator or length prefix) need no joining by the caller. Parts
// under 2 KiB are copied into a pooled buffer, larger ones go to the kernel
// as they are: a writev of many small pieces costs more than the copy.
// Otherwise it behaves as WriteFrame.
func (c *Conn) WriteFrameParts(parts [][]byte) error {
	if c.deflate != nil {
		total := 0
		for _, p := range parts {
			total += len(p)
		}
		b := getBuf(total)
		for _, p := range parts {
			*b = append(*b, p...)
		}
		err := c.writeCompressed(*b)
		putBuf(b)
		return err
	}
	total, small := 0, 0
	for _, p := range parts {
		total += len(p)
		if len(p) < copyPartMax {
			small += len(p)
		}
	}
	c.wmu.Lock()
	defer c.unlockWrite()
	if err := c.writable(); err != nil {
		return err
	}
	n := putHeader(c.whdr[:], c.dataOp, total)
	c.setWriteDeadline()
	if !c.vectored {
		return c.wrote(c.writeCopy(c.whdr[:n], parts...))
	}
	v := vecPool.Get().(*vector)
	stage := getBuf(n + small)
	v.gather(stage, c.whdr[:n], parts)
	_, err := v.bufs.WriteTo(c.nc)
	clear(v.parts) // keep no payload reachable from the pool
	v.parts = v.parts[:0]
	vecPool.Put(v)
	putBuf(stage)
	return c.wrote(err)
}

// writeCompressed sends payload as one message of a connection that
// negotiated compression: compressed for this connection alone. Messages
// sent to many connections are better made once with AppendFrame and sent
// with WriteFrames.
func (c *Conn) writeCompressed(payload []byte) error {
	b := getBuf(len(payload) + maxServerHeader)
	*b = c.deflate.AppendFrame((*b)[:0], c.dataOp == opBinary, payload)
	err := c.WriteFrames([]string{unsafe.String(unsafe.SliceData(*b), len(*b))})
	putBuf(b)
	return err
}

// WriteFrames sends complete frames, made by [Compression.AppendFrame]
// with the connection's Compression, back to back in one write call: one
// WebSocket message each, compressed or not, so that a message compressed
// once goes to every connection as it is. Frames under 2 KiB are copied
// into a pooled buffer, larger ones go to the kernel as they are. Otherwise
// it behaves as WriteFrame.
func (c *Conn) WriteFrames(frames []string) error {
	// The writer's goroutine starts with a small stack and the deadline
	// and the write go deep into the runtime: a large frame here made the
	// stack grow (and be copied) at nearly every write, so the work is
	// split into small frames.
	if len(frames) == 1 {
		return c.writeRaw(unsafe.Slice(unsafe.StringData(frames[0]), len(frames[0])))
	}
	v, stage := gatherFrames(frames)
	c.wmu.Lock()
	err := c.writeVectorLocked(v)
	c.unlockWrite()
	releaseVector(v, stage)
	return err
}

// writeRaw sends bytes that are whole frames already, in one write.
func (c *Conn) writeRaw(frames []byte) error {
	c.wmu.Lock()
	err := c.writable()
	if err == nil {
		c.setWriteDeadline()
		_, err = c.nc.Write(frames)
		err = c.wrote(err)
	}
	c.unlockWrite()
	return err
}

// gatherFrames lists frames for one writev, small ones copied into stage.
// Frames are never written to: they may be shared by many connections.
//
//go:noinline
func gatherFrames(frames []string) (*vector, *[]byte) {
	small := 0
	for _, f := range frames {
		if len(f) < copyPartMax {
			small += len(f)
		}
	}
	v := vecPool.Get().(*vector)
	for _, f := range frames {
		v.frames = append(v.frames, unsafe.Slice(unsafe.StringData(f), len(f)))
	}
	stage := getBuf(small)
	v.gather(stage, nil, v.frames)
	clear(v.frames)
	v.frames = v.frames[:0]
	return v, stage
}

// writeVectorLocked writes what gatherFrames listed, under wmu.
func (c *Conn) writeVectorLocked(v *vector) error {
	if err := c.writable(); err != nil {
		return err
	}
	c.setWriteDeadline()
	var err error
	if c.vectored {
		_, err = v.bufs.WriteTo(c.nc)
	} else {
		err = c.writeCopy(nil, v.parts...)
	}
	return c.wrote(err)
}

// releaseVector gives gatherFrames' vector and stage back to their pools.
func releaseVector(v *vector, stage *[]byte) {
	clear(v.parts) // keep no payload reachable from the pool
	v.parts = v.parts[:0]
	vecPool.Put(v)
	putBuf(stage)
}

// writeControl sends a pong (or another control frame) from the reader.
func (c *Conn) writeControl(op byte, payload []byte) error {
	c.wmu.Lock()
	err := c.writeFrameLocked(op, payload)
	c.unlockWrite()
	return err
}

func (c *Conn) writeFrameLocked(op byte, payload []byte) error {
	if err := c.writable(); err != nil {
		return err
	}
	n := putHeader(c.whdr[:], op, len(payload))
	c.setWriteDeadline()
	var err error
	if c.vectored {
		c.wvec[0], c.wvec[1] = c.whdr[:n], payload
		c.wbufs = c.wvec[:]
		_, err = c.wbufs.WriteTo(c.nc)
		c.wvec[1] = nil
	} else {
		err = c.writeCopy(c.whdr[:n], payload)
	}
	return c.wrote(err)
}

// writable reports why nothing more may be written, under wmu.
func (c *Conn) writable() error {
	if c.wclosed || c.closeReq.Load() != nil {
		return ErrClosed
	}
	if c.werr != nil {
		return c.werr
	}
	return c.flushLocked()
}

// wrote records a failed write: the peer may have half a frame, so the
// stream is unusable from here on.
func (c *Conn) wrote(err error) error {
	if err != nil {
		c.werr = fmt.Errorf("websocket: write: %w", err)
		return c.werr
	}
	return nil
}

func (c *Conn) setWriteDeadline() {
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout))
}

// writeCopy joins a frame in a pooled buffer for connections (TLS) where
// separate writes would mean separate records and packets.
func (c *Conn) writeCopy(header []byte, parts ...[]byte) error {
	n := len(header)
	for _, p := range parts {
		n += len(p)
	}
	b := getBuf(n)
	*b = append((*b)[:0], header...)
	for _, p := range parts {
		*b = append(*b, p...)
	}
	_, err := c.nc.Write(*b)
	putBuf(b)
	return err
}

// putHeader writes a final, unmasked frame header and returns its length.
func putHeader(dst []byte, op byte, n int) int {
	dst[0] = 0x80 | op
	switch {
	case n < 126:
		dst[1] = byte(n)
		return 2
	case n <= 0xffff:
		dst[1] = 126
		binary.BigEndian.PutUint16(dst[2:], uint16(n))
		return 4
	}
	dst[1] = 127
	binary.BigEndian.PutUint64(dst[2:], uint64(n))
	return 10
}

// copyPartMax is the size under which WriteFrameParts copies a part
// instead of giving it its own iovec.
const copyPartMax = 2 << 10

// vector is a reusable writev list for WriteFrameParts.
type vector struct {
	frames [][]byte // WriteFrames' frames as byte slices
	parts  [][]byte
	bufs   net.Buffers // consumed by WriteTo, hence apart from parts
}

// gather lists header and parts for one writev, copying runs of small parts
// into stage, which has room for all of them, so it never moves.
func (v *vector) gather(stage *[]byte, header []byte, parts [][]byte) {
	buf := append((*stage)[:0], header...)
	start := 0
	for _, p := range parts {
		if len(p) < copyPartMax {
			buf = append(buf, p...)
			continue
		}
		if len(buf) > start {
			v.parts = append(v.parts, buf[start:])
			start = len(buf)
		}
		v.parts = append(v.parts, p)
	}
	if len(buf) > start {
		v.parts = append(v.parts, buf[start:])
	}
	*stage = buf
	v.bufs = v.parts
}

var vecPool = sync.Pool{New: func() any { return new(vector) }}
