package gyre

import (
	"bytes"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// DeliveryTracer is told what a node did with each publication that
// carries a Trace (PublishOptions.Trace), so that the fan-out can be
// traced as part of the publish that caused it. See Config.DeliveryTracer.
type DeliveryTracer interface {
	// FannedOut is called on the goroutine that fanned out, after it,
	// from many goroutines at once (channels fan out independently); it
	// must not block and must not keep f, or f.Trace (the engine reuses
	// them).
	FannedOut(f *FanOut)
}

// FanOut is what one node did with a traced publication on one path:
// the channel's own subscribers, or the subscribers of one wildcard
// pattern that matches the channel. Consecutive publications of a run
// that carry the same Trace (the publishes of one API batch) are told
// together, as Publications of them: a batch of 100 publishes makes one
// report per node, not 100. Its counts are of deliveries, a subscription
// (one per connection and channel or pattern) and a publication each: a
// delivery is counted in at most one of Reached, Filtered and Dropped,
// and Publications × Subscribers less the three is how many subscribers
// had a publication already (positioned subscribers whose position, read
// from the stream as they subscribed, counts it).
type FanOut struct {
	// Trace is the publication's PublishOptions.Trace.
	Trace []byte
	// Channel is the publication's channel.
	Channel string
	// Pattern is the wildcard pattern whose subscribers were given the
	// publication, for a pattern path; "" for the channel's own.
	Pattern string
	// Offset is the (first) publication's place in the channel's
	// stream; 0 for a channel without history.
	Offset uint64
	// Publications is how many consecutive publications of the run, all
	// with this Trace, the report is of: 1 but for a batch.
	Publications int
	// Start and End bound the fan-out on this path of the run the
	// publication came in: a broker hands over consecutive publications
	// of a channel together, and they are fanned out together.
	Start, End time.Time
	// Subscribers is how many subscriptions the path had when the run
	// arrived.
	Subscribers int
	// Reached is how many were given the publication: queued for their
	// connection, or held by a subscription still being set up, which
	// sends it after its subscribe reply (unless the position that reply
	// gave counts it already).
	Reached int
	// Filtered is how many did not take it: their tag filter held it back.
	Filtered int
	// Dropped is how many could not be given it: it could not be encoded
	// for their connection (binary data for a JSON client), or came in a
	// run after one that could not (the connection is closed either way);
	// their connection's queue was full (it is closed as slow); their
	// connection or subscription was closing; or their subscription,
	// still being set up, held too many publications already.
	Dropped int
}

// fate is what became of one publication given to one subscriber: the
// counts of FanOut, and fateHad for a subscriber that had it already.
type fate uint8

const (
	fateReached fate = iota
	fateFiltered
	fateDropped
	fateHad
	numFates
)

// fates counts the fates of one publication of a run on one path.
type fates [numFates]int32

// traces reports whether the fan-out of run is to be counted for tracer
// t: when there is one and a publication of run carries a Trace. Without,
// the fan-out counts nothing (b.fates stays nil): a run without traced
// publications costs a look at each publication's Trace, nothing per
// subscriber.
func traces(t DeliveryTracer, run []broker.RunPublication) bool {
	if t == nil {
		return false
	}
	for i := range run {
		if len(run[i].Pub.Trace) > 0 {
			return true
		}
	}
	return false
}

// countFates makes b.fates n zero counts, in the buffer kept between
// runs: the fan-out then counts the fates of a run of n publications.
func (b *burst) countFates(n int) {
	fs := b.fateBuf
	if cap(fs) < n {
		fs = make([]fates, n)
	} else {
		fs = fs[:n]
		clear(fs)
	}
	b.fates, b.fateBuf = fs, fs
	b.wholeReached = 0
}

// fannedOut tells t what became of each traced publication of run, fanned
// out since start to the subs subscribers of channel's path (of pattern,
// when set), as counted in b.fates, and stops counting.
func (b *burst) fannedOut(t DeliveryTracer, run []broker.RunPublication, channel, pattern string, subs int, start time.Time) {
	end := time.Now()
	f := &b.fanOut
	for i := 0; i < len(run); {
		pub := run[i].Pub
		if len(pub.Trace) == 0 {
			i++
			continue
		}
		*f = FanOut{
			Trace: pub.Trace, Channel: channel, Pattern: pattern, Offset: pub.Offset,
			Start: start, End: end, Subscribers: subs,
		}
		// The publications after it with the same trace (a batch's) go
		// in the same report.
		for ; i < len(run) && bytes.Equal(run[i].Pub.Trace, pub.Trace); i++ {
			c := &b.fates[i]
			f.Publications++
			f.Reached += int(c[fateReached]) + b.wholeReached
			f.Filtered += int(c[fateFiltered])
			f.Dropped += int(c[fateDropped])
		}
		t.FannedOut(f)
	}
	*f = FanOut{} // the burst must not keep the publication's bytes alive
	b.fates = nil
}

// countWhole counts what a subscriber given the run in one queue
// operation got: the first given of its publications when queued, none
// otherwise; those after the first given could not be encoded (see
// wholeRun.err). The usual case, all of them queued, is one count for
// the run (b.wholeReached), not one per publication: a traced run costs
// the same per subscriber whatever its length.
func (b *burst) countWhole(given int, queued bool) {
	fs := b.fates
	if queued && given == len(fs) {
		b.wholeReached++
		return
	}
	for i := range fs {
		f := fateDropped
		if queued && i < given {
			f = fateReached
		}
		fs[i][f]++
	}
}
