package memory

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// sweeper is what Broker, PresenceManager and MapBroker share: a
// background sweep on a ticker, and Close, which stops it and makes
// every later call ErrClosed.
type sweeper struct {
	closed    atomic.Bool
	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// startSweep starts calling sweep every interval until close.
func (s *sweeper) startSweep(interval time.Duration, sweep func(now time.Time)) {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.sweepLoop(interval, sweep)
}

func (s *sweeper) sweepLoop(interval time.Duration, sweep func(now time.Time)) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			sweep(now)
		}
	}
}

// close stops the sweep and waits for it to end; later calls do nothing.
func (s *sweeper) close() {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.stop)
		<-s.done
	})
}

func (s *sweeper) checkOpen() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// handlerSlot holds the handler given to Run, which may be given once.
type handlerSlot[H comparable] struct{ p atomic.Pointer[H] }

func (s *handlerSlot[H]) set(h H) error {
	var none H
	if h == none {
		return errors.New("memory: Run with nil handler")
	}
	if !s.p.CompareAndSwap(nil, &h) {
		return errors.New("memory: Run called twice")
	}
	return nil
}

// get returns the handler, the zero H before Run.
func (s *handlerSlot[H]) get() H {
	if p := s.p.Load(); p != nil {
		return *p
	}
	var none H
	return none
}
