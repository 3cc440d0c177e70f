package gyre

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/gyrehq/gyre/broker"
)

// OccupancyHandlerFunc gets the cluster's occupancy transitions (channels
// occupied and vacated, users online and offline), in order per key. It
// returns nil once they are delivered or dropped on purpose; an error
// hands the same events (same IDs) over again later.
type OccupancyHandlerFunc func(ctx context.Context, events []broker.OccupancyEvent) error

func (f OccupancyHandlerFunc) HandleOccupancy(ctx context.Context, events []broker.OccupancyEvent) error {
	return f(ctx, events)
}

// OnOccupancy sets the handler of the transitions that Config.Occupancy
// decides. It must be called before Run.
func (n *Node) OnOccupancy(h OccupancyHandlerFunc) {
	n.occupancyHandler = h
}

// checkOccupancy refuses state events without a tracker to decide them.
func (n *Node) checkOccupancy(r *channelRules) error {
	if n.cfg.Occupancy != nil {
		return nil
	}
	if n.cfg.UserStatusEvents {
		return errors.New("gyre: UserStatusEvents needs Config.Occupancy")
	}
	if r.cfg.WithoutNamespace.StateEvents {
		return errors.New("gyre: channels without namespace: StateEvents needs Config.Occupancy")
	}
	for _, ns := range r.cfg.Namespaces {
		if ns.StateEvents {
			return fmt.Errorf("gyre: namespace %q: StateEvents needs Config.Occupancy", ns.Name)
		}
	}
	return nil
}

// occupancyKey is a key of the tracker.
type occupancyKey struct {
	kind broker.OccupancyKind
	key  string
}

// occupancyWant is the state a key should have in the tracker.
type occupancyWant struct {
	held bool
	info []byte
}

// occupancySync hands this node's holds to the tracker on a goroutine of
// its own. The hub records a change under the lock that orders it (a
// channel's subLock, a user's hub shard lock), where waiting for Redis
// would stall every subscriber of the shard; the goroutine brings the
// tracker to the latest state wanted for each key changed, so a key held
// and released again between two rounds costs the tracker nothing (it
// ignores a Release of a key it does not hold, as a repeated Hold). A call
// that fails needs no retry here: the tracker keeps what it was told and
// applies it once its backend is back (broker.OccupancyTracker).
type occupancySync struct {
	tracker broker.OccupancyTracker
	log     *slog.Logger

	mu    sync.Mutex
	dirty map[occupancyKey]occupancyWant
	wake  chan struct{}

	// failing is set from the first failed round to the next good one,
	// for one log line per episode.
	failing bool

	stop chan struct{}
	done chan struct{}
}

func newOccupancySync(t broker.OccupancyTracker, log *slog.Logger) *occupancySync {
	return &occupancySync{
		tracker: t, log: log,
		dirty: map[occupancyKey]occupancyWant{},
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
}

// set records that this node holds key (held) or no longer does. It never
// blocks.
func (o *occupancySync) set(kind broker.OccupancyKind, key string, held bool, info []byte) {
	o.mu.Lock()
	o.dirty[occupancyKey{kind, key}] = occupancyWant{held: held, info: info}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// occupancyParallel bounds the changes of a round handed to the tracker
// at once.
const occupancyParallel = 16

// run applies the changes until close; then once more, so that the
// releases of a graceful shutdown reach the tracker.
func (o *occupancySync) run() {
	defer close(o.done)
	for {
		select {
		case <-o.wake:
		case <-o.stop:
			o.apply()
			return
		}
		o.apply()
	}
}

// apply hands the recorded changes to the tracker.
func (o *occupancySync) apply() {
	o.mu.Lock()
	batch := o.dirty
	if len(batch) == 0 {
		o.mu.Unlock()
		return
	}
	o.dirty = make(map[occupancyKey]occupancyWant, len(batch))
	o.mu.Unlock()
	// The keys of a round are distinct, so they may go to the tracker side
	// by side (a Redis tracker waits for Redis on each): the order of one
	// key's changes is that of the rounds.
	var (
		wg       sync.WaitGroup
		sem      = make(chan struct{}, occupancyParallel)
		errMu    sync.Mutex
		firstErr error
	)
	for k, w := range batch {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var err error
			if w.held {
				err = o.tracker.Hold(k.kind, k.key, w.info)
			} else {
				err = o.tracker.Release(k.kind, k.key)
			}
			if err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	switch {
	case firstErr != nil && !o.failing:
		o.failing = true
		o.log.Warn("occupancy tracker unreachable: it keeps the channel state and user status changes and applies them once it is back", "error", firstErr)
	case firstErr == nil && o.failing:
		o.failing = false
		o.log.Info("occupancy tracker took changes again")
	}
}

// close applies what is recorded once more and stops.
func (o *occupancySync) close() {
	close(o.stop)
	<-o.done
}
