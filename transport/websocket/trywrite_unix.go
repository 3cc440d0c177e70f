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
//
// It goes through RawConn.Control, not RawConn.Write: Write takes the
// runtime's write lock and arms the poller for a wait this call never
// makes (3 % of a broadcast's samples in a perf profile). The lock is
// not needed: every write of the connection holds wmu. Control
// still holds a reference on the descriptor, so a concurrent close
// cannot hand its number to another socket mid-call; and no deadline
// applies, as the call never waits.
func (c *Conn) writeNow(b []byte) (int, error) {
	op := writeOps.Get().(*writeOp)
	op.b = b
	err := c.raw.Control(op.fn)
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
	fn  func(fd uintptr)
}

var writeOps = sync.Pool{New: func() any {
	op := new(writeOp)
	op.fn = op.write
	return op
}}

// write is the call RawConn.Control makes: it writes what the socket
// takes and stops at the first short or refused write.
func (op *writeOp) write(fd uintptr) {
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
}
