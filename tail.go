package gyre

import (
	"context"
	"fmt"

	"github.com/gyrehq/gyre/protocol"
)

// Tail calls fn with every publication of channel published anywhere in
// the cluster, until ctx ends or the node shuts down. It returns once the
// subscription is in place (what is published after that reaches fn); the
// returned channel is closed when the tail has ended. channel may be a
// pattern where its namespace allows wildcard subscriptions; fn then gets
// each publication's own channel.
//
// The publications come through the node's normal fan-out, as to any
// subscriber: Tail holds a hidden subscription of an in-process
// connection, which the node does not count as a client, puts in no
// presence, announces with no join or leave and shows to no handler. It
// exists for tools that watch a channel from the server side (the admin
// interface's live tail). fn runs on one goroutine at a time and must not
// block for long: a slow fn is closed as a slow client would be.
func (n *Node) Tail(ctx context.Context, channel string, fn func(channel string, pub *Publication)) (<-chan struct{}, error) {
	rules := n.rules.Load()
	opts, pattern, err := rules.lookupSubscribe(channel)
	if err != nil {
		return nil, fmt.Errorf("gyre: tail %q: %w", channel, err)
	}
	t := &tailTransport{fn: fn}
	c := n.NewClient(ctx, t)
	c.hidden = true
	c.tslot = hiddenSlot
	c.mu.Lock()
	c.subs = make(map[string]*subscription)
	c.mu.Unlock()
	p := subscribeParams{channel: channel, opts: opts, serverSide: true}
	if pattern {
		p.patternOnly(rules)
	}
	s, _, err := c.startSubscription(p)
	if err != nil {
		c.close(DisconnectConnectionClosed, false)
		return nil, fmt.Errorf("gyre: tail %q: %w", channel, err)
	}
	s.activate(s.offset.Load())
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
		case <-c.Done():
		}
		c.close(DisconnectConnectionClosed, false)
	}()
	return done, nil
}

// tailTransport is the in-process transport of Tail: it decodes the
// pushes the node writes and hands their publications to fn.
type tailTransport struct {
	fn func(channel string, pub *Publication)
}

func (t *tailTransport) Name() string            { return "tail" }
func (t *tailTransport) Protocol() protocol.Type { return protocol.TypeProtobuf }
func (t *tailTransport) Unidirectional() bool    { return true }
func (t *tailTransport) Close(*Disconnect) error { return nil }

func (t *tailTransport) WriteFrame(frame []byte) error {
	pushes, err := protocol.DecodePushes(protocol.TypeProtobuf, frame, nil)
	if err != nil {
		return fmt.Errorf("gyre: tail: decode pushes: %w", err)
	}
	for _, p := range pushes {
		pp := p.Pub
		if pp == nil {
			continue
		}
		ch := p.Channel
		if pp.Channel != "" {
			ch = pp.Channel
		}
		pub := &Publication{Offset: pp.Offset, Data: pp.Data, Tags: pp.Tags, Time: pp.Time, Channel: pp.Channel}
		if i := pp.Info; i != nil {
			pub.Info = &ClientInfo{ClientID: i.Client, UserID: i.User, ConnInfo: i.ConnInfo, ChanInfo: i.ChanInfo}
		}
		t.fn(ch, pub)
	}
	return nil
}
