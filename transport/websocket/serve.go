package websocket

import (
	"errors"
	"net"
	"sync/atomic"
	"syscall"

	"github.com/gyrehq/gyre/internal/stackgrow"
)

// errNoMessage tells a polled reader that control frames used up what was
// buffered and no data message is complete; it never leaves the package.
var errNoMessage = errors.New("websocket: no message buffered")

// States of a polled connection. Exactly one party owns the read side at
// a time: the poller while armed, one serving goroutine while serving.
const (
	stateArmed       int32 = iota // waiting in the poller for input
	stateServing                  // a goroutine reads and handles messages
	stateServingStop              // serving, and Close came meanwhile
	stateDone                     // reading has ended
)

// pollReg is a connection served by a Poller.
type pollReg struct {
	conn      *Conn
	p         *Poller
	raw       syscall.RawConn
	fd        int32
	gen       uint32      // tells a stale event for a reused fd from a live one
	added     atomic.Bool // in the poller's epoll set
	state     atomic.Int32
	onMessage func(payload []byte, binary bool) bool
	onError   func(error)
}

// ServeReads reads the connection in the background and returns at once.
// Each data message goes to onMessage, one at a time and in order, never
// two of one connection at once; onMessage returns false to stop reading
// (onError is then not called). When reading ends for any other reason,
// onError is called once: with ReadMessage's error, with ErrClosed when
// Close ended a connection that was waiting for input, or with
// ErrPollerClosed.
//
// With a Poller, on Linux, and on a plain TCP or Unix connection, a
// connection waiting for input has no goroutine: the poller watches its
// socket and, when it turns readable, starts a goroutine that handles every
// message that arrived and ends. A frame that arrives in parts keeps that
// goroutine waiting for its rest. Otherwise (a nil Poller, TLS, another
// system) one goroutine per connection reads in a loop, as ReadMessage
// would.
//
// Either way onMessage runs on a short-lived goroutine, so a handler that
// grows its stack does not leave an idle connection holding that stack.
// The payload is valid only until onMessage returns.
//
// ServeReads must be called at most once, and ReadMessage must not be called
// after it.
func (c *Conn) ServeReads(p *Poller, onMessage func(payload []byte, binary bool) bool, onError func(error)) {
	r := &pollReg{conn: c, p: p, onMessage: onMessage, onError: onError}
	if p == nil || !r.bind() {
		go r.loop()
		return
	}
	r.state.Store(stateServing)
	c.poll.Store(r)
	if c.closeReq.Load() != nil {
		r.stop() // Close ran before it could see r
	}
	if c.in.buffered() > 0 {
		// Bytes that came behind the handshake: the socket may never
		// turn readable for them.
		go r.serve()
		return
	}
	r.rearm(true)
}

// bind finds the socket under the connection, if it can be polled.
func (r *pollReg) bind() bool {
	var sc syscall.Conn
	switch nc := r.conn.nc.(type) {
	case *net.TCPConn:
		sc = nc
	case *net.UnixConn:
		sc = nc
	default:
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	fd := int32(-1)
	if raw.Control(func(s uintptr) { fd = int32(s) }) != nil || fd < 0 {
		return false
	}
	r.raw, r.fd, r.gen = raw, fd, r.p.nextGen()
	return true
}

// serve handles every message the socket has for now, then hands the
// connection back to the poller.
func (r *pollReg) serve() {
	// A connect command goes deeper than a new goroutine's stack.
	stackgrow.Grow()
	c := r.conn
	for {
		payload, binary, compressed, err := c.nextMessage(true)
		if err == errNoMessage {
			break
		}
		if err == nil && compressed {
			payload, binary, err = c.inflateMessage(payload, binary)
		}
		if err != nil {
			r.finish(err)
			return
		}
		if !r.onMessage(payload, binary) {
			c.dropMessage()
			c.in.discard()
			r.finish(nil)
			return
		}
		if c.in.buffered() == 0 {
			break
		}
	}
	// Nothing may be held while waiting: the next reader is another
	// goroutine, and an idle connection keeps no pooled buffer.
	c.dropMessage()
	c.in.release()
	r.rearm(false)
}

// rearm gives the connection to the poller, or ends reading if Close came
// while it was being served.
func (r *pollReg) rearm(first bool) {
	var err error
	if !r.state.CompareAndSwap(stateServing, stateArmed) {
		r.state.Store(stateDone)
		err = ErrClosed
	} else if err = r.p.arm(r); err == nil {
		return
	} else if !r.state.CompareAndSwap(stateArmed, stateDone) {
		return // Close took it over
	}
	r.p.remove(r)
	if first {
		go r.onError(err) // ServeReads returns at once
		return
	}
	r.onError(err)
}

// fire is the poller's wake-up call for a readable socket.
func (r *pollReg) fire() {
	if r.state.CompareAndSwap(stateArmed, stateServing) {
		go r.serve()
	}
}

// finish ends reading from the serving goroutine.
func (r *pollReg) finish(err error) {
	r.state.Store(stateDone)
	r.p.remove(r)
	if err != nil {
		r.onError(err)
	}
}

// stop is called by Close. A connection waiting in the poller ends here;
// one being served ends when its goroutine is done.
func (r *pollReg) stop() {
	r.end(ErrClosed)
}

func (r *pollReg) end(err error) {
	for {
		switch s := r.state.Load(); s {
		case stateArmed:
			if r.state.CompareAndSwap(s, stateDone) {
				r.p.remove(r)
				go r.onError(err) // the caller of Close may hold locks onError takes
				return
			}
		case stateServing:
			if r.state.CompareAndSwap(s, stateServingStop) {
				return
			}
		default:
			return
		}
	}
}

// loop is the goroutine-per-connection way to serve reads.
func (r *pollReg) loop() {
	for {
		payload, binary, compressed, err := r.conn.nextMessage(false)
		if err == nil {
			var more bool
			if more, err = r.handleApart(payload, binary, compressed); err == nil && !more {
				return
			}
		}
		if err != nil {
			r.onError(err)
			return
		}
	}
}

// handleApart inflates a compressed message and runs onMessage on a
// short-lived goroutine, and waits for it: the reading goroutine lives as
// long as the connection, and a goroutine's stack only grows. It returns
// onMessage's answer, or the error that ended reading.
func (r *pollReg) handleApart(payload []byte, binary, compressed bool) (bool, error) {
	type result struct {
		more bool
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var err error
		if compressed {
			if payload, binary, err = r.conn.inflateMessage(payload, binary); err != nil {
				done <- result{err: err}
				return
			}
		}
		done <- result{more: r.onMessage(payload, binary)}
	}()
	res := <-done
	return res.more, res.err
}
