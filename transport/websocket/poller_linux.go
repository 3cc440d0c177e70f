//go:build linux

package websocket

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// pollEvents is how many readiness events one epoll_wait returns at most.
const pollEvents = 256

// Poller watches many connections for input with one epoll set and one
// goroutine, so that a connection waiting for its peer needs no goroutine
// of its own. See [Conn.ServeReads]. A Poller is safe for concurrent use;
// one per process is enough.
type Poller struct {
	epfd  int
	ep    *os.File // owns epfd
	epRaw syscall.RawConn
	wake  [2]int // a pipe whose read end wakes the loop for Close
	done  chan struct{}

	// ctlMu orders epoll_ctl calls (read side) before Close releases
	// epfd, so that no call reaches a recycled descriptor.
	ctlMu  sync.RWMutex
	closed bool

	mu   sync.Mutex
	regs map[int32]*pollReg // by socket descriptor

	gen atomic.Uint32
}

// NewPoller creates a poller and starts its goroutine; Close stops it.
func NewPoller() (*Poller, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("websocket: epoll_create1: %w", err)
	}
	// The poller's goroutine waits for the epoll set itself to become
	// readable in the runtime's own netpoller, as for any socket, rather
	// than blocked in epoll_wait: a thread blocked in a system call has its
	// P taken away by the runtime's monitor and handed back on every
	// wake-up (docs/benchmarks.md: a fifth less CPU with idle connections).
	if err := syscall.SetNonblock(epfd, true); err != nil {
		_ = syscall.Close(epfd)
		return nil, fmt.Errorf("websocket: epoll set: %w", err)
	}
	ep := os.NewFile(uintptr(epfd), "epoll")
	raw, err := ep.SyscallConn()
	if err != nil {
		_ = ep.Close()
		return nil, fmt.Errorf("websocket: epoll set: %w", err)
	}
	p := &Poller{epfd: epfd, ep: ep, epRaw: raw, done: make(chan struct{}), regs: make(map[int32]*pollReg)}
	if err := syscall.Pipe2(p.wake[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		_ = ep.Close()
		return nil, fmt.Errorf("websocket: pipe2: %w", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(p.wake[0])}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, p.wake[0], &ev); err != nil {
		p.closeFds()
		return nil, fmt.Errorf("websocket: epoll_ctl: %w", err)
	}
	go p.run()
	return p, nil
}

// Close stops the poller. Connections waiting in it end with
// ErrPollerClosed; those being served end the same way when they are done.
func (p *Poller) Close() error {
	p.ctlMu.Lock()
	if p.closed {
		p.ctlMu.Unlock()
		return nil
	}
	p.closed = true
	p.ctlMu.Unlock()
	_, _ = syscall.Write(p.wake[1], []byte{0})
	<-p.done
	p.closeFds()

	p.mu.Lock()
	regs := p.regs
	p.regs = make(map[int32]*pollReg)
	p.mu.Unlock()
	for _, r := range regs {
		if r.state.CompareAndSwap(stateArmed, stateDone) {
			go r.onError(ErrPollerClosed)
		}
	}
	return nil
}

// Len is the number of connections registered, waiting or being served.
func (p *Poller) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.regs)
}

func (p *Poller) closeFds() {
	_ = p.ep.Close()
	_ = syscall.Close(p.wake[0])
	_ = syscall.Close(p.wake[1])
}

func (p *Poller) nextGen() uint32 { return p.gen.Add(1) }

// run waits for readable sockets and starts serving them.
func (p *Poller) run() {
	defer close(p.done)
	events := make([]syscall.EpollEvent, pollEvents)
	// Read calls the function again each time the set becomes readable
	// after it returned false (the set was empty), and returns once it
	// returns true: Close woke the set, or epoll_wait failed, which only a
	// bad epfd makes it do, and Close owns that.
	_ = p.epRaw.Read(func(fd uintptr) bool {
		for {
			n, err := syscall.EpollWait(int(fd), events, 0)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case err != nil:
				return true
			case n == 0:
				return false
			}
			if p.dispatchEvents(events[:n]) {
				return true
			}
		}
	})
}

// dispatchEvents starts serving the sockets of events; true when Close
// woke the set.
func (p *Poller) dispatchEvents(events []syscall.EpollEvent) (closing bool) {
	for i := range events {
		ev := &events[i]
		if ev.Fd == int32(p.wake[0]) {
			return true
		}
		p.mu.Lock()
		r := p.regs[ev.Fd]
		p.mu.Unlock()
		if r != nil && r.gen == uint32(ev.Pad) {
			r.fire()
		}
	}
	return false
}

// arm asks for one readiness event on r's socket: EPOLLONESHOT disarms it
// when the event is delivered, so only one goroutine serves it at a time.
// Level triggering makes an arm fire at once if input is already waiting.
// The first arm adds the socket to the set (whether or not the connection
// was served before it, as one with input buffered at ServeReads is), later
// ones re-arm it.
func (p *Poller) arm(r *pollReg) error {
	p.ctlMu.RLock()
	defer p.ctlMu.RUnlock()
	if p.closed {
		return ErrPollerClosed
	}
	op := syscall.EPOLL_CTL_MOD
	// Marked before the call: once added, the socket's event can reach
	// another goroutine, which re-arms it, before this one returns.
	if !r.added.Swap(true) {
		op = syscall.EPOLL_CTL_ADD
		p.mu.Lock()
		p.regs[r.fd] = r
		p.mu.Unlock()
	}
	ev := syscall.EpollEvent{
		Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT,
		Fd:     r.fd,
		Pad:    int32(r.gen),
	}
	var cerr error
	// Control keeps the descriptor open, and fails once it is closed.
	if err := r.raw.Control(func(fd uintptr) {
		cerr = syscall.EpollCtl(p.epfd, op, int(fd), &ev)
	}); err != nil {
		return fmt.Errorf("websocket: poll: %w", err)
	}
	if cerr != nil {
		return fmt.Errorf("websocket: epoll_ctl: %w", cerr)
	}
	return nil
}

// remove forgets r. Its socket is taken out of the epoll set while still
// open; a closed socket has left it already.
func (p *Poller) remove(r *pollReg) {
	p.mu.Lock()
	if p.regs[r.fd] == r {
		delete(p.regs, r.fd)
	}
	p.mu.Unlock()
	p.ctlMu.RLock()
	defer p.ctlMu.RUnlock()
	if p.closed {
		return
	}
	_ = r.raw.Control(func(fd uintptr) {
		_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil)
	})
}
