package broker

import (
	"errors"
	"fmt"
	"slices"
)

// RoutedOccupancy is an OccupancyTracker made of independent trackers, one
// per route, each key going to the tracker of its route. A route is where
// the events of its keys go (a server's route is a backend): each tracker
// hands its events over, retries them and lets go of them on its own, so
// a handler that keeps failing one route's events (its backend is down)
// holds back that route's events only, while the others go on. Within a
// route the guarantees are the tracker's; between routes there is no
// order.
//
// Every node of a cluster must route each key to the same route, and
// build each route's tracker on the same backend with the same route
// name. A key that moves to another route (a changed config) is released
// in the old one when the holds of the nodes that held it there end.
type RoutedOccupancy struct {
	route    func(kind OccupancyKind, key string) string
	trackers map[string]OccupancyTracker
	names    []string // sorted, for a stable order of starts and closes
}

var (
	_ OccupancyTracker     = (*RoutedOccupancy)(nil)
	_ OccupancyDropCounter = (*RoutedOccupancy)(nil)
)

// ErrNoOccupancyRoute is returned by Hold and Release of a RoutedOccupancy
// for a key that its route function sends to no tracker.
var ErrNoOccupancyRoute = errors.New("broker: no occupancy route")

// NewRoutedOccupancy returns a tracker that sends each key to
// trackers[route(kind, key)]. It owns the trackers: Close closes them.
func NewRoutedOccupancy(route func(kind OccupancyKind, key string) string, trackers map[string]OccupancyTracker) *RoutedOccupancy {
	r := &RoutedOccupancy{route: route, trackers: trackers}
	for name := range trackers {
		r.names = append(r.names, name)
	}
	slices.Sort(r.names)
	return r
}

// Routes returns the names of the routes, sorted.
func (r *RoutedOccupancy) Routes() []string { return slices.Clone(r.names) }

func (r *RoutedOccupancy) tracker(kind OccupancyKind, key string) (OccupancyTracker, error) {
	if err := CheckOccupancyKey(kind, key); err != nil {
		return nil, err
	}
	name := r.route(kind, key)
	t := r.trackers[name]
	if t == nil {
		return nil, fmt.Errorf("%w for %v %q (route %q)", ErrNoOccupancyRoute, kind, key, name)
	}
	return t, nil
}

// Hold holds key in its route's tracker.
func (r *RoutedOccupancy) Hold(kind OccupancyKind, key string, info []byte) error {
	t, err := r.tracker(kind, key)
	if err != nil {
		return err
	}
	return t.Hold(kind, key, info)
}

// Release releases key in its route's tracker.
func (r *RoutedOccupancy) Release(kind OccupancyKind, key string) error {
	t, err := r.tracker(kind, key)
	if err != nil {
		return err
	}
	return t.Release(kind, key)
}

// RunOccupancy runs every route's tracker with h, which each calls on its
// own: h may be called by several routes at once, each with its own keys.
// Should one fail to start, those started are closed.
func (r *RoutedOccupancy) RunOccupancy(h OccupancyHandler, o OccupancyOptions) error {
	for i, name := range r.names {
		if err := r.trackers[name].RunOccupancy(h, o); err != nil {
			for _, started := range r.names[:i] {
				_ = r.trackers[started].Close()
			}
			return fmt.Errorf("occupancy route %q: %w", name, err)
		}
	}
	return nil
}

// Close closes every route's tracker.
func (r *RoutedOccupancy) Close() error {
	var errs []error
	for _, name := range r.names {
		if err := r.trackers[name].Close(); err != nil {
			errs = append(errs, fmt.Errorf("occupancy route %q: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// OccupancyDropped sums the drops of the routes' trackers that count
// them.
func (r *RoutedOccupancy) OccupancyDropped() uint64 {
	var n uint64
	for _, t := range r.trackers {
		if dc, ok := t.(OccupancyDropCounter); ok {
			n += dc.OccupancyDropped()
		}
	}
	return n
}
