package hooks

import "time"

// Observer is told what a Queue does, for metrics. One Observer serves
// one Queue (one proxy). Its methods are called with the queue's lock
// held: they must be safe for concurrent use, must not block, and must
// not call the Queue.
type Observer interface {
	// Delivered: one request delivered a batch of n events of kind,
	// taking d (n gives the batch sizes).
	Delivered(kind Kind, n int, d time.Duration)
	// Failed: one request of a batch of kind failed for reason (one of
	// the Fail constants); the batch is sent again.
	Failed(kind Kind, reason string)
	// Dropped: n events of kind were dropped for reason (DropQueueFull
	// or DropMaxAge).
	Dropped(kind Kind, reason string, n int)
	// QueueLength: the queue now holds n events, the request in flight
	// included.
	QueueLength(n int)
}

// Why events were dropped, as Observer.Dropped and Record.Reason give it.
const (
	// DropQueueFull: the queue held QueueConfig.MaxEvents events.
	DropQueueFull = "queue_full"
	// DropMaxAge: the event waited QueueConfig.MaxAge without being
	// delivered.
	DropMaxAge = "max_age"
)

// noObserver is the Observer of a Queue without one.
type noObserver struct{}

func (noObserver) Delivered(Kind, int, time.Duration) {}
func (noObserver) Failed(Kind, string)                {}
func (noObserver) Dropped(Kind, string, int)          {}
func (noObserver) QueueLength(int)                    {}
