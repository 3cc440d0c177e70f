package broker

import (
	"context"
	"time"
)

// OccupancyKind tells what the key of an occupancy change is.
type OccupancyKind uint8

const (
	// OccupancyChannel: a channel, held while it has a subscriber.
	OccupancyChannel OccupancyKind = 1
	// OccupancyUser: a user id, held while it has a connection.
	OccupancyUser OccupancyKind = 2
)

// OccupancyEvent is one transition of a key, decided once for the cluster.
type OccupancyEvent struct {
	ID       string
	Kind     OccupancyKind
	Key      string
	Occupied bool
	TimeMs   int64
	Info     []byte
}

// OccupancyHandler gets the transitions, in order per key.
type OccupancyHandler interface {
	HandleOccupancy(ctx context.Context, events []OccupancyEvent) error
}

// OccupancyOptions tune a tracker.
type OccupancyOptions struct {
	ChannelDelay, UserDelay time.Duration
	Lease                   time.Duration
}

// OccupancyTracker keeps which keys have a holder anywhere in the cluster.
type OccupancyTracker interface {
	Hold(kind OccupancyKind, key string, info []byte) error
	Release(kind OccupancyKind, key string) error
	RunOccupancy(h OccupancyHandler, o OccupancyOptions) error
}
