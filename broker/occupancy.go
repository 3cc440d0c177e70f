package broker

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Occupancy: which channels have subscribers and which users have
// connections anywhere in a cluster of nodes, told as transitions.
//
// Each node tells its OccupancyTracker when it gets its first holder of a
// key (Hold: a channel's first subscriber on the node, a user's first
// connection) and when it loses its last (Release). The tracker combines
// the nodes' holds: a key is occupied while any node holds it, and the
// tracker hands one event to one node's OccupancyHandler per transition of
// the whole cluster:
//
//   - occupied (a channel) or online (a user) when the first node holds a
//     key that nobody held;
//   - vacated or offline when the last holder released it and nobody held
//     it again within the delay of its kind (OccupancyOptions); a Hold
//     within the delay cancels the transition, and no event at all is
//     made for the pair.
//
// Events are handed over at least once: a handler that returns an error,
// or a node that dies or is closed while its handler runs, gets the same
// events (the same IDs) handed over again later, to this node or another.
// Per key they come in the order of the transitions, and at any time to
// one node's handler only; each event carries an ID that stays the same
// when it is handed over again, for the receiver to drop repeats.
//
// A node that dies keeps nothing held: each tracker renews a lease on
// its holds, and when a node stops renewing (it died, or lost its backend
// for longer than the lease), its keys are released as if it had called
// Release when the lease ran out; the delay follows as for any release.

// OccupancyKind is what a key of occupancy names.
type OccupancyKind uint8

// The kinds of occupancy keys. Each kind is a namespace of its own: a
// channel and a user of the same name are two keys.
const (
	// OccupancyChannel keys are channels; their events are occupied and
	// vacated.
	OccupancyChannel OccupancyKind = 1
	// OccupancyUser keys are user IDs; their events are online and
	// offline.
	OccupancyUser OccupancyKind = 2
)

// String names the kind, "channel" or "user".
func (k OccupancyKind) String() string {
	switch k {
	case OccupancyChannel:
		return "channel"
	case OccupancyUser:
		return "user"
	}
	return fmt.Sprintf("OccupancyKind(%d)", uint8(k))
}

// Valid tells whether k is one of the kinds.
func (k OccupancyKind) Valid() bool { return k == OccupancyChannel || k == OccupancyUser }

// ErrBadOccupancyKey is returned by Hold and Release for a key that
// cannot be tracked: an unknown kind or an empty key.
var ErrBadOccupancyKey = errors.New("broker: bad occupancy key")

// CheckOccupancyKey returns an error wrapping ErrBadOccupancyKey unless
// kind is valid and key is not empty; trackers call it first.
func CheckOccupancyKey(kind OccupancyKind, key string) error {
	switch {
	case !kind.Valid():
		return fmt.Errorf("%w: %v", ErrBadOccupancyKey, kind)
	case key == "":
		return fmt.Errorf("%w: empty %v", ErrBadOccupancyKey, kind)
	}
	return nil
}

// OccupancyEvent is one transition of a key.
type OccupancyEvent struct {
	// ID is unique among the events of a tracker's backend, and the same
	// each time the event is handed over.
	ID   string
	Kind OccupancyKind
	// Key is the channel or the user ID.
	Key string
	// Occupied is true for occupied and online, false for vacated and
	// offline.
	Occupied bool
	// TimeMs is when the transition happened, in Unix milliseconds: the
	// first Hold; for vacated and offline when the last holder left (its
	// Release, or the end of its lease), not the end of the delay.
	TimeMs int64
	// Info is the info given to Hold by the holder whose Hold occupied
	// the key, on both events of the pair; nil when it gave none.
	Info []byte
}

// OccupancyHandler gets the transitions.
type OccupancyHandler interface {
	// HandleOccupancy is given events, in order per key, and returns nil
	// once they are delivered (or dropped on purpose): they are then
	// forgotten. An error means they were not, and the same events come
	// again later. A tracker calls it from one goroutine at a time. ctx
	// is done when the tracker closes, or when this node may no longer be
	// the only one handling these keys (it lost its backend): the handler
	// should then give up and return an error, the events being handed to
	// whichever node takes over.
	HandleOccupancy(ctx context.Context, events []OccupancyEvent) error
}

// OccupancyOptions are a tracker's timings. Every node of a cluster
// should use the same.
type OccupancyOptions struct {
	// ChannelDelay and UserDelay are how long a key of the kind stays
	// occupied after its last holder left: a Hold within it cancels the
	// transition. Zero: vacated/offline as soon as the last holder left.
	ChannelDelay, UserDelay time.Duration
	// Lease is how long a node's holds outlive it: a node renews its
	// lease every Lease/3, and the holds of one that stopped (it died)
	// are released when the lease runs out. Zero means the engine's
	// default (the Redis engine's presence TTL). A one-node engine
	// (memory) has no use for it.
	Lease time.Duration
}

// Delay returns the delay of kind.
func (o OccupancyOptions) Delay(kind OccupancyKind) time.Duration {
	if kind == OccupancyUser {
		return o.UserDelay
	}
	return o.ChannelDelay
}

// Check returns an error naming the first negative field.
func (o OccupancyOptions) Check() error {
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"ChannelDelay", o.ChannelDelay}, {"UserDelay", o.UserDelay}, {"Lease", o.Lease}} {
		if f.v < 0 {
			return fmt.Errorf("broker: OccupancyOptions.%s %v is negative", f.name, f.v)
		}
	}
	return nil
}

// OccupancyTracker is one node's part of cluster-wide occupancy. Its
// methods are safe for concurrent use.
//
// The node calls Hold when it gets its first holder of a key and Release
// when it loses its last, once each per change: a tracker keeps for each
// key whether this node holds it, so a repeated Hold or a Release of a
// key not held changes nothing. Hold and Release may be called before
// RunOccupancy: what they say is applied once it runs.
type OccupancyTracker interface {
	// Hold says that this node now holds key. info (a user's info, from
	// its first connection) goes with the occupied/online event when
	// this Hold makes it, and with the vacated/offline event after it.
	// An error means the backend could not be told now; the tracker
	// keeps the hold and applies it when the backend is back, so the
	// caller does not call Hold again. The tracker keeps info, not the
	// caller's slice.
	Hold(kind OccupancyKind, key string, info []byte) error
	// Release says that this node no longer holds key; an error is as
	// for Hold.
	Release(kind OccupancyKind, key string) error
	// RunOccupancy starts the tracker's background work: renewing this
	// node's lease, ending delays, releasing the holds of dead nodes,
	// and handing events to h. It returns at once; it may be called
	// once.
	RunOccupancy(h OccupancyHandler, o OccupancyOptions) error
	// Close stops the background work and waits for it, the handler's
	// current call included (its ctx is done). It releases nothing: the
	// holds of a closed tracker end with its lease, as a dead node's, and
	// events it was handing over go to another node. Later calls of
	// Close return nil, other methods an error.
	Close() error
}

// OccupancyDropCounter is implemented by trackers that bound the
// transitions waiting for their handler and drop the oldest past the
// bound (a handler that stays down for long). A server checks for it with
// a type assertion on its OccupancyTracker, to export the count as a
// metric.
type OccupancyDropCounter interface {
	// OccupancyDropped returns how many transitions this tracker dropped
	// since it was made. It only grows. A transition dropped while a
	// handler call in progress holds it counts, although that call may
	// still hand it over: the count is exact while the handler fails,
	// and may exceed what was lost by the events of the calls in
	// progress while dropping.
	OccupancyDropped() uint64
}
