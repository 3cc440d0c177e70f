//go:build unix

package websocket

import (
	"net"
	"sync"
	"syscall"
)

// rawOf is the socket under nc for TryWriteFrame, nil when it has none.
func rawOf(nc net.Conn) syscall.RawConn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// writeNow writes as much of b as the socket takes now and reports how
// much that was; a full send buffer is no error.
func (c *Conn) writeNow(b []byte) (int, error) {
	op := writeOps.Get().(*writeOp)
	op.b = b
	err := c.raw.Write(op.fn)
	n, werr := op.n, op.err
	*op = writeOp{fn: op.fn}
	writeOps.Put(op)
	if err != nil {
		return n, err
	}
	return n, werr
}

// writeOp is one writeNow's call on the socket. They are pooled, their
// method value made once: a closure per call was a fifth of what a
// broadcast allocated.
type writeOp struct {
	b   []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

var writeOps = sync.Pool{New: func() any {
	op := new(writeOp)
	op.fn = op.write
	return op
}}

// write is the call RawConn.Write makes: it reports done whatever the
// socket took, never asking to wait.
func (op *writeOp) write(fd uintptr) bool {
	for op.n < len(op.b) {
		k, err := syscall.Write(int(fd), op.b[op.n:])
		if k > 0 {
			op.n += k
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil && err != syscall.EAGAIN {
			op.err = err
		}
		if err != nil || k <= 0 {
			break
		}
	}
	return true
}
