package gyre

import (
	"context"
	"errors"
	"sync"

	"github.com/gyrehq/gyre/broker"
)

// SubscriptionStream is a source of publications for one client's
// subscription, which a subscribe handler sets in SubscribeReply.Stream:
// the application feeds this subscription itself (a backend's stream, a
// log tail, a query) instead of publishing into the channel.
//
// What it delivers goes to this client only: it never passes through the
// broker and is kept in no history, so a streamed subscription is neither
// recoverable nor positioned, and its publications carry no offset. The
// subscription stays a member of its channel all the same: it receives
// what is published into the channel, and presence and join/leave work as
// usual.
//
// A client's publish into the channel goes to Publish, never to the
// publish handler or the broker.
type SubscriptionStream interface {
	// Start is called once, right after the subscribe result is queued
	// for the client, so that nothing sub delivers can reach the client
	// before it. sub delivers publications and ends the subscription.
	// Start must not block: whatever feeds the stream runs in a goroutine
	// of its own.
	Start(sub *StreamSubscription)
	// Publish receives the data of the client's publish commands into
	// the channel while the subscription lives; a nil error answers the
	// client with an empty publish result. A stream that takes nothing
	// from the client returns ErrorNotAvailable. Like a handler's, an
	// *Error is sent to the client as is, a *Disconnect closes the
	// connection and any other error answers 100. Publish may run at
	// the same time as Close.
	Publish(ctx context.Context, data []byte) error
	// Close is called once when the subscription ends, whatever ended
	// it: the client unsubscribing or disconnecting, Client.Unsubscribe,
	// StreamSubscription.Unsubscribe, the node shutting down. When the
	// subscribe fails after the handler returned (the client closed
	// meanwhile, a limit), Close is called without Start. It is never
	// called while Start runs, and must not block.
	Close()
}

// ErrSubscriptionEnded is returned by StreamSubscription.Publish once the
// subscription has ended.
var ErrSubscriptionEnded = errors.New("gyre: subscription ended")

// StreamSubscription is the engine's side of a SubscriptionStream: it
// delivers publications to the one subscription the stream feeds, and
// ends it. Its methods are safe for concurrent use; publications
// delivered from one goroutine reach the client in the order delivered.
type StreamSubscription struct {
	s *subscription
}

// Client is the connection the subscription belongs to.
func (ss *StreamSubscription) Client() *Client { return ss.s.client }

// Channel is the channel subscribed to.
func (ss *StreamSubscription) Channel() string { return ss.s.channel }

// Done is closed when the subscription has ended.
func (ss *StreamSubscription) Done() <-chan struct{} { return ss.s.stream.done }

// Publish delivers a publication to this subscription only, encoded and
// queued as the channel's publications are, without offset. The
// subscription's tags filter, if any, applies. It returns
// ErrSubscriptionEnded after the subscription ended; a payload that is
// not JSON for a JSON client closes the connection with 3506, as a
// publication of the channel would, and returns an error saying so.
func (ss *StreamSubscription) Publish(data []byte, tags map[string]string) error {
	s := ss.s
	if s.state.Load() == subClosed {
		return ErrSubscriptionEnded
	}
	if !s.filter.Match(tags) {
		return nil
	}
	pub := broker.Publication{Data: data, Tags: tags}
	enc := publicationPush(s.channel, &pub, false, nil)
	enc.channelID = s.channelID
	c := s.client
	msg := enc.forClient(c, s.shape, variantPlain)
	if msg == nil {
		c.node.undeliverable(c, s.channel, enc.err)
		return enc.err
	}
	c.sent("push_publication", len(msg))
	s.deliver(msg, 0, "", nil)
	return nil
}

// Unsubscribe ends the subscription, telling the client with an
// unsubscribe push carrying code and reason (2000 and up, see
// UnsubscribeCodeServer and UnsubscribeCodeInsufficientState: 2500 and up
// make the client subscribe again). It does nothing once the subscription
// has ended, nor to a later subscription of the client to the channel.
func (ss *StreamSubscription) Unsubscribe(code uint32, reason string) {
	ss.s.client.unsubscribeSub(ss.s, code, reason)
}

// subStream runs a SubscriptionStream for one subscription: it calls
// Start and Close once each, Close never while Start runs.
type subStream struct {
	src  SubscriptionStream
	done chan struct{}

	mu       sync.Mutex
	started  bool
	starting bool
	ended    bool
}

func newSubStream(src SubscriptionStream) *subStream {
	return &subStream{src: src, done: make(chan struct{})}
}

// start calls the stream's Start, unless the subscription ended already.
// An end that comes while Start runs (Start itself may end the
// subscription) leaves Close to be called here once Start returned.
func (st *subStream) start(s *subscription) {
	if st == nil {
		return
	}
	st.mu.Lock()
	if st.ended || st.started {
		st.mu.Unlock()
		return
	}
	st.started, st.starting = true, true
	st.mu.Unlock()
	st.src.Start(&StreamSubscription{s: s})
	st.mu.Lock()
	st.starting = false
	ended := st.ended
	st.mu.Unlock()
	if ended {
		st.src.Close()
	}
}

// end marks the subscription ended and closes the stream, once.
func (st *subStream) end() {
	if st == nil {
		return
	}
	st.mu.Lock()
	if st.ended {
		st.mu.Unlock()
		return
	}
	st.ended = true
	close(st.done)
	starting := st.starting
	st.mu.Unlock()
	if !starting {
		st.src.Close()
	}
}

// publish hands a client's publish to the stream once it has started.
func (st *subStream) publish(ctx context.Context, data []byte) error {
	st.mu.Lock()
	live := st.started && !st.ended
	st.mu.Unlock()
	if !live {
		return ErrorNotAvailable
	}
	return st.src.Publish(ctx, data)
}

// streamOf returns the stream feeding the client's subscription to
// channel, nil when it has none.
func (c *Client) streamOf(channel string) *subStream {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.subs[channel]; s != nil {
		return s.stream
	}
	return nil
}

// streamOnly makes the subscription one a SubscriptionStream feeds: what
// it is given has no place in the channel's stream, so recovery,
// positioning and delta compression are off.
func (p *subscribeParams) streamOnly() {
	p.recoverable, p.positioned, p.recover, p.delta = false, false, false, false
}
