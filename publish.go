// The publish path, in the order a publication takes it:
//
//   - publish.go: Publish and PublishMany; a burst publishes a batch
//     through the broker and owns the wake list of the connections it
//     queued to;
//   - the broker stores the publications and hands them back in runs
//     (broker.RunHandler), within the call (memory) or from pub/sub (Redis);
//   - publish_fanout.go: HandleRuns and broadcastRun give each local
//     subscriber its share of a run, in one queue operation when it takes
//     the whole run; publish_patterns.go does the same for pattern
//     subscriptions;
//   - publish_encode.go: each publication is encoded once per wire variant
//     for a whole fan-out, and once for all the channels of a broadcast;
//   - subscription.go (deliver) and writer.go: the connection's queue, and
//     one write for everything queued, made by the wake list's goroutines
//     (wakeAll) or the connection's own.

package gyre

import (
	"errors"
	"fmt"

	"github.com/gyrehq/gyre/broker"
)

// PublishOptions are the per-call knobs of Publish.
type PublishOptions struct {
	Tags           map[string]string
	IdempotencyKey string
	SkipHistory    bool
	UseDelta       bool
	ClientInfo     *ClientInfo
	// Version and VersionEpoch drop stale publications: see WithVersion.
	Version      uint64
	VersionEpoch string
	// Trace is the W3C trace context of the span that publishes, in
	// binary: 16-byte trace id, 8-byte span id, 1 byte of trace flags (25
	// bytes); nil for none. It travels with the publication to every node
	// (not into history) and is handed to Config.DeliveryTracer with the
	// fan-out of the publication. The engine does not read it.
	Trace []byte
}

// PublishOption sets one publish knob.
type PublishOption func(*PublishOptions)

// WithTags attaches tags to a publication (for tag filters).
func WithTags(tags map[string]string) PublishOption {
	return func(o *PublishOptions) { o.Tags = tags }
}

// WithIdempotencyKey makes repeated publishes with the same key within the
// node's IdempotentResultTTL publish once.
func WithIdempotencyKey(key string) PublishOption {
	return func(o *PublishOptions) { o.IdempotencyKey = key }
}

// WithSkipHistory publishes without saving to the channel's history.
func WithSkipHistory() PublishOption {
	return func(o *PublishOptions) { o.SkipHistory = true }
}

// WithDelta makes the publication a delta candidate for subscribers that
// negotiated delta compression.
func WithDelta() PublishOption {
	return func(o *PublishOptions) { o.UseDelta = true }
}

// WithClientInfo attaches publisher info to the publication.
func WithClientInfo(info *ClientInfo) PublishOption {
	return func(o *PublishOptions) { o.ClientInfo = info }
}

// WithVersion gives the publication a version: in a channel with history,
// a publication whose version is not greater than the last published
// one's (of the same epoch; an empty epoch matches any) is dropped, and
// the result is Suppressed with the stream's top. It keeps a state
// pushed from several places, or retried, from going back in time. A
// new epoch starts the versions again. 0 means no version.
func WithVersion(version uint64, epoch string) PublishOption {
	return func(o *PublishOptions) { o.Version, o.VersionEpoch = version, epoch }
}

// WithTrace attaches the trace context tc (see PublishOptions.Trace) to
// the publication, so that its fan-out on every node can be traced as
// part of the publish.
func WithTrace(tc []byte) PublishOption {
	return func(o *PublishOptions) { o.Trace = tc }
}

// PublishResult is where a publication landed in its stream.
type PublishResult struct {
	StreamPosition
	// Suppressed is true when an idempotency key matched an earlier
	// publish, or the version was not newer than the channel's (see
	// WithVersion), and nothing was sent.
	Suppressed bool
}

// Publish sends data to every subscriber of channel (on every node) and
// saves it to history when the channel's namespace keeps history. An
// unknown namespace gives ErrorUnknownChannel; a broker that cannot serve
// gives an error that is ErrorInternal to errors.Is and errors.As and
// says the broker's error in its text. It is PublishMany with one item.
func (n *Node) Publish(channel string, data []byte, opts ...PublishOption) (PublishResult, error) {
	item := [1]PublishItem{{Channel: channel, Data: data, Options: applyPublishOptions(opts)}}
	n.PublishMany(item[:])
	return item[0].Result, item[0].Err
}

// applyPublishOptions moves the options to the heap only when there are
// some: a PublishOptions whose address goes to a func value escapes.
func applyPublishOptions(opts []PublishOption) PublishOptions {
	if len(opts) == 0 {
		return PublishOptions{}
	}
	o := new(PublishOptions)
	for _, f := range opts {
		f(o)
	}
	return *o
}

// burstMaxPublications bounds how long a burst holds writers back: after
// that many publications it wakes them and goes on. It is also how many
// items go to the broker in one call.
const burstMaxPublications = 256

// PublishItem is one publication of PublishMany: what to publish, and,
// once PublishMany returns, where it landed or why it did not.
type PublishItem struct {
	Channel string
	Data    []byte
	Options PublishOptions

	Result PublishResult
	Err    error
}

// PublishMany publishes items in order, as many Publish calls would, and
// sets each item's Result or Err. It is how a batch should be published:
//
//   - the broker gets the items together, up to 256 at a time: Redis
//     receives them pipelined, in one round trip per server, instead of one
//     round trip each; the memory broker publishes each stretch of
//     consecutive items of one channel under one hold of the channel's
//     order, so that no other publisher's publication comes between them;
//   - each connection is woken once for all the publications it gets from
//     those 256, so that they leave in one write, and a subscriber is given
//     a stretch of its channel's publications in one queue operation
//     (with the memory broker; with Redis the same happens when the
//     publications come back from pub/sub).
//
// Per channel the items keep their order; between channels the order is
// not kept on every broker (a sharded Redis setup publishes to its servers
// at the same time). An item of an unknown namespace gets
// ErrorUnknownChannel and the others are published.
func (n *Node) PublishMany(items []PublishItem) {
	b := n.getBurst()
	// Deferred: a burst must never go back to the pool, or be dropped,
	// with writers it holds unwoken.
	defer n.putBurst(b)
	b.publish(items)
	ok := 0
	for i := range items {
		if items[i].Err == nil {
			ok++
		}
	}
	n.published.Add(int64(ok))
}

// A burst publishes a batch and fans out what the broker hands back for
// it (with a broker that delivers before publishing returns), or what a
// broker hands over in one call: the writers of the connections it queued
// messages for are woken once, when it is done, instead of once per
// message. It also holds the scratch of a fan-out. A burst is for one
// goroutine at a time; bursts are pooled per node.
type burst struct {
	n *Node
	// wake holds the writers queued to and not woken yet.
	wake wakeList
	// count is the number of publications queued since the last wake.
	count int
	// handler receives the deliveries of the burst's own publications
	// from a DirectPublisher.
	handler burstHandler
	// scratch kept between uses.
	items []broker.PublishItem
	encs  []encodedPush
	whole wholeRuns
	// sent tallies what a fan-out queued, for the Observer.
	sent deliveries
	// fates, while a run with traced publications is fanned out on one
	// path, counts what became of each of them (traceRun); nil
	// otherwise. fateBuf keeps its array, fanOut what the tracer is told.
	fates   []fates
	fateBuf []fates
	fanOut  FanOut
	// wholeReached counts, with fates, the subscribers that were given
	// every publication of the run in one queue operation.
	wholeReached int
	// bodies checks and encodes a publication once for the channels it
	// goes to.
	bodies pubBodies
}

// burstHandler is a burst as the broker.RunHandler of its publications.
type burstHandler struct{ b *burst }

func (n *Node) getBurst() *burst {
	if b, ok := n.bursts.Get().(*burst); ok {
		return b
	}
	b := &burst{n: n}
	b.handler.b = b
	return b
}

// putBurst wakes what b holds and returns it to the pool.
func (n *Node) putBurst(b *burst) {
	b.flush()
	b.bodies = pubBodies{} // hold no payload in the pool
	n.bursts.Put(b)
}

// flush wakes the writers the burst queued messages for.
func (b *burst) flush() {
	b.wake.wakeAll()
	b.count = 0
	// Reported once for the burst, not once for each run: a broadcast's
	// runs are a publication each, and reporting them one by one was a
	// fiftieth of the server's CPU on broadcasts to personal channels.
	b.sent.report(b.n, "push_publication")
}

// tally counts k publications about to be queued, waking the held
// writers first when they would take the burst past burstMaxPublications.
func (b *burst) tally(k int) {
	if b.count > 0 && b.count+k > burstMaxPublications {
		b.flush()
	}
	b.count += k
}

// publish publishes items through the broker, burstMaxPublications at a
// time.
func (b *burst) publish(items []PublishItem) {
	rules := b.n.rules.Load()
	for len(items) > 0 {
		k := min(len(items), burstMaxPublications)
		if err := b.n.backpressure.admit(); err != nil {
			for i := range items {
				items[i].Result, items[i].Err = PublishResult{}, err
			}
			return
		}
		b.publishChunk(rules, items[:k])
		items = items[k:]
	}
}

func (b *burst) publishChunk(rules *channelRules, items []PublishItem) {
	n := b.n
	bi := b.items[:0]
	for i := range items {
		it := &items[i]
		it.Result = PublishResult{}
		chOpts, err := rules.lookup(it.Channel)
		switch {
		case err != nil:
		case chOpts.SubscriptionType.IsMap():
			err = errMapChannel
		case chOpts.SubscriptionType == SubscriptionTypeSharedPoll:
			err = errSharedPollChannel
		}
		it.Err = err
		if err != nil {
			continue
		}
		bi = append(bi, broker.PublishItem{Channel: it.Channel, Data: it.Data, Opts: n.brokerPublishOptions(rules, it.Channel, chOpts, it.Options)})
	}
	if len(bi) > 0 {
		if n.direct != nil {
			b.tally(len(bi))
			n.direct.PublishManyTo(&b.handler, bi)
		} else {
			n.broker.PublishMany(bi)
		}
	}
	j, sent := 0, 0
	for i := range items {
		it := &items[i]
		if it.Err != nil {
			continue
		}
		r := &bi[j]
		j++
		if r.Err != nil {
			n.obs.BrokerFailed("publish")
			it.Err = publishError(it.Channel, r.Err)
			continue
		}
		sent++
		it.Result = PublishResult{StreamPosition: r.Position, Suppressed: r.Suppressed}
	}
	if sent > 0 {
		n.obs.BrokerSent("publication", sent)
	}
	clear(bi) // the scratch must not keep the payloads alive
	b.items = bi[:0]
}

// HandleRuns fans out the burst's own publications; the writers are woken
// when the burst is done.
func (h *burstHandler) HandleRuns(runs []broker.Run) error {
	h.b.n.broadcastRuns(runs, h.b)
	return nil
}

// brokerPublishOptions is what the broker is told for a publication with
// options o in a channel with options chOpts.
func (n *Node) brokerPublishOptions(rules *channelRules, channel string, chOpts *ChannelOptions, o PublishOptions) broker.PublishOptions {
	bo := broker.PublishOptions{
		ClientInfo:          o.ClientInfo,
		Tags:                o.Tags,
		IdempotencyKey:      o.IdempotencyKey,
		IdempotentResultTTL: n.cfg.IdempotentResultTTL,
		UseDelta:            o.UseDelta || chOpts.DeltaPublish,
		Trace:               o.Trace,
	}
	if chOpts.HistoryEnabled() && !o.SkipHistory {
		bo.HistorySize = chOpts.HistorySize
		bo.HistoryTTL = chOpts.HistoryTTL
		bo.HistoryMetaTTL = chOpts.HistoryMetaTTL
		// Versions live in the stream's meta: without history there is
		// nothing to compare with, as in Centrifugo.
		bo.Version, bo.VersionEpoch = o.Version, o.VersionEpoch
	}
	if !chOpts.deltaSeen {
		// No subscriber of the namespace takes deltas, so asking for one
		// would only make the broker keep a base nobody reads; and a
		// broker that knows no base is kept may skip clearing it (Redis
		// then publishes a channel without history by plain PUBLISH).
		bo.UseDelta, bo.NoDelta = false, true
	}
	if chOpts.AllowWildcardSubscriptions {
		bo.PatternScope, _ = rules.patternScope(channel)
	}
	return bo
}

// errMapChannel: a publication into a map channel, whose changes are
// keyed (Node.MapPublish).
var errMapChannel = &causedError{e: ErrorBadRequest, cause: errors.New("gyre: a map channel takes keyed writes (MapPublish), not publications")}

// errSharedPollChannel: a publication into a shared-poll channel, whose
// values come from polling the backend (or SharedPollPublish).
var errSharedPollChannel = &causedError{e: ErrorBadRequest, cause: errors.New("gyre: a shared-poll channel takes values by key (SharedPollPublish), not publications")}

// publishError is the error of a failed publish: an unavailable broker is
// ErrorInternal (temporary) to the client, the broker's error kept for the
// caller's log.
func publishError(channel string, err error) error {
	switch {
	case errors.Is(err, broker.ErrNotAvailable):
		err = &causedError{e: ErrorInternal, cause: err}
	case errors.Is(err, broker.ErrNotSupported):
		err = &causedError{e: ErrorNotAvailable, cause: err}
	}
	return fmt.Errorf("gyre: publish to %q: %w", channel, err)
}
