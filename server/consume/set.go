package consume

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Consumer reads one source and hands its messages to its Dispatcher.
type Consumer interface {
	// Run consumes until ctx ends, then finishes the batch it is running
	// (its commands run to their end, Dispatcher.Dispatch stops retrying),
	// acknowledges what is done and returns nil. It returns an error only
	// for a failure it cannot get past (a configuration the source
	// refuses); failures that may pass (the source down) it rides out,
	// reporting them through Dispatcher.SourceFailed.
	Run(ctx context.Context) error
}

// Set runs the consumers of a server.
type Set struct {
	mu      sync.Mutex
	entries []*entry
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

type entry struct {
	d       *Dispatcher
	c       Consumer
	running bool
}

// Add adds consumer c, whose dispatcher is d, to be started by Start.
func (s *Set) Add(d *Dispatcher, c Consumer) {
	s.mu.Lock()
	s.entries = append(s.entries, &entry{d: d, c: c})
	s.mu.Unlock()
}

// Len is the number of consumers.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Start runs every consumer in its own goroutine.
func (s *Set) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	for _, e := range s.entries {
		e.running = true
		e.d.log.Info("consumer started")
		s.wg.Go(func() {
			err := e.c.Run(ctx)
			s.mu.Lock()
			e.running = false
			s.mu.Unlock()
			if err != nil && !errors.Is(err, context.Canceled) {
				e.d.stats.setError(err.Error())
				e.d.log.Error("consumer stopped", "error", err)
				return
			}
			e.d.log.Info("consumer stopped")
		})
	}
}

// Stop stops the consumers and waits, within ctx, until each has finished
// what it was running and acknowledged it.
func (s *Set) Stop(ctx context.Context) error {
	s.mu.Lock()
	cancel := s.cancel
	s.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("consume: consumers still running at the end of shutdown: %w", ctx.Err())
	}
}

// Snapshots are the states of the consumers, in the order they were added.
func (s *Set) Snapshots() []Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Snapshot, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.d.snapshot()
		out[i].Running = e.running
	}
	return out
}
