package gyre

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/protocol"
)

// A map subscription (SubscribeRequest.type 1, 2 or 3) reaches live in
// phases the client drives, each a subscribe command of its own:
//
//   - STATE (phase 2): pages of the state, by cursor. The first page,
//     without cursor, is authorized as a stream subscribe is (handler,
//     token, namespace rules) and starts the client's flow for the
//     channel; it freezes the stream position the state is read at, and
//     every page carries only entries written at or before it: later
//     changes come with the stream. The last page goes live at once when
//     the channel keeps no stream (ephemeral: the subscription was
//     attached before the first page, so changes since are held) or when
//     the stream ran ahead by at most a page.
//   - STREAM (phase 1): pages of the stream after the client's position,
//     until it is within a page of the top captured by the first stream
//     request; then live. Without a flow, a recovering client (recover)
//     starts one here, authorized as above.
//   - LIVE (phase 0 in the result): the subscription joins the channel
//     (hub and MapBroker.Subscribe), pending, reads the stream after the
//     client's position, answers with that catch-up and is activated:
//     what arrived meanwhile after the catch-up's top goes out after the
//     reply, what it covers is dropped. Nothing lost, nothing twice.
//
// Flows are bounded by the namespace's SubscribeCatchUpTimeout (the
// connection is closed with 3008), and one page at a time per channel
// (113 otherwise).

// Map subscription phases, of SubscribeRequest and SubscribeResult.
const (
	mapPhaseLive   int32 = 0
	mapPhaseStream int32 = 1
	mapPhaseState  int32 = 2
)

// mapFlow is a client's map subscription on its way to live, from its
// first request on. Its fields are used by the request holding it
// (busy), one at a time.
type mapFlow struct {
	c *Client
	// p is what the first request was authorized with.
	p subscribeParams
	// busy is set while a request reads a page (guarded by c.mu).
	busy bool
	// frozen is the stream position of the first state page.
	frozen   broker.StreamPosition
	captured bool
	// streamTop is the stream top the first stream request captured.
	streamTop   uint64
	topCaptured bool
	// pending is the subscription of a channel without a stream,
	// attached before the first state page so that it holds the changes
	// made while the client pages.
	pending *subscription

	timerMu sync.Mutex
	timer   *time.Timer
}

// stopTimer stops the catch-up timeout of f.
func (f *mapFlow) stopTimer() {
	f.timerMu.Lock()
	if f.timer != nil {
		f.timer.Stop()
	}
	f.timerMu.Unlock()
}

// mapSubscribeCmd handles a subscribe command of a map type. As for a
// stream subscription, the reply is enqueued here, and a subscription
// that went live is activated right after it.
func (c *Client) mapSubscribeCmd(id uint32, req *protocol.SubscribeRequest) bool {
	res, s, err := c.mapSubscribe(req)
	if err != nil {
		return c.finishCommand("subscribe", id, nil, err)
	}
	reply := func() { c.enqueueReply("subscribe", &protocol.Reply{Id: id, Subscribe: res}) }
	if s == nil {
		reply()
	} else {
		s.activateAfter(s.offset.Load(), reply)
	}
	return c.state.Load() != stateClosed
}

// mapSubscribe serves one request of a map flow; s is set when the
// subscription went live.
func (c *Client) mapSubscribe(req *protocol.SubscribeRequest) (res *protocol.SubscribeResult, s *subscription, err error) {
	opts, err := c.mapNamespace(req)
	if err != nil {
		return nil, nil, err
	}
	switch req.Phase {
	case mapPhaseState:
		return c.mapStatePhase(req, opts)
	case mapPhaseStream, mapPhaseLive:
		return c.mapStreamPhase(req, opts)
	}
	c.node.log.Info("map subscribe: unknown phase", "client", c.id, "channel", req.Channel, "phase", req.Phase)
	return nil, nil, ErrorBadRequest
}

// mapNamespace returns the options of the channel of a map subscribe
// request, whose type must be its namespace's.
func (c *Client) mapNamespace(req *protocol.SubscribeRequest) (*ChannelOptions, error) {
	n := c.node
	opts, err := n.rules.Load().lookup(req.Channel)
	if err != nil {
		if errors.Is(err, ErrorBadRequest) {
			n.log.Info("map subscribe: a pattern names no map channel", "client", c.id, "channel", req.Channel)
		}
		return nil, err
	}
	if want := opts.SubscriptionType.protoType(); req.Type != want {
		n.log.Info("subscription type does not match the namespace", "client", c.id, "channel", req.Channel,
			"type", req.Type, "namespace_type", want)
		return nil, ErrorBadRequest
	}
	if n.mapBroker == nil {
		n.log.Info("map subscribe refused: no map broker configured", "client", c.id, "channel", req.Channel)
		return nil, ErrorNotAvailable
	}
	return opts, nil
}

// mapStatePhase serves a state page: the first one starts the flow.
func (c *Client) mapStatePhase(req *protocol.SubscribeRequest, opts *ChannelOptions) (*protocol.SubscribeResult, *subscription, error) {
	var f *mapFlow
	var err error
	if req.Cursor == "" {
		f, err = c.beginMapFlow(req)
	} else {
		f, err = c.resumeMapFlow(req.Channel)
		if err == nil && f == nil {
			c.node.log.Info("map subscribe: state page with a cursor but no subscribe in progress", "client", c.id, "channel", req.Channel)
			err = ErrorPermissionDenied
		}
	}
	if err != nil {
		return nil, nil, err
	}
	res, s, err := c.mapStatePage(req, f)
	c.settleMapFlow(f, s, err)
	return res, s, err
}

// mapStreamPhase serves a stream page, or goes live; a recovering client
// without a flow starts one.
func (c *Client) mapStreamPhase(req *protocol.SubscribeRequest, opts *ChannelOptions) (*protocol.SubscribeResult, *subscription, error) {
	n := c.node
	f, err := c.resumeMapFlow(req.Channel)
	if err != nil {
		return nil, nil, err
	}
	if f == nil {
		if !req.Recover {
			n.log.Info("map subscribe: stream phase without state phase nor recovery", "client", c.id, "channel", req.Channel)
			return nil, nil, ErrorPermissionDenied
		}
		if !opts.Map.Mode.HasStream() {
			// Nothing to recover from: the client loads the state.
			n.log.Debug("map subscribe: recovery in a channel without a stream", "client", c.id, "channel", req.Channel)
			return nil, nil, ErrorUnrecoverablePosition
		}
		if f, err = c.beginMapFlow(req); err != nil {
			return nil, nil, err
		}
	}
	res, s, err := c.mapStreamPage(req, f)
	c.settleMapFlow(f, s, err)
	return res, s, err
}

// beginMapFlow authorizes the first request of a flow, as a stream
// subscribe is, and registers the flow, busy. A flow in progress for the
// channel is replaced (the client started over).
func (c *Client) beginMapFlow(req *protocol.SubscribeRequest) (*mapFlow, error) {
	if err := c.replaceMapFlow(req.Channel); err != nil {
		return nil, err
	}
	p, err := c.authorizeSubscribe(req)
	if err != nil {
		p.stream.end()
		return nil, err
	}
	if p.stream != nil {
		p.stream.end()
		c.node.log.Error("subscribe handler gave a map subscription a stream of its own", "client", c.id, "channel", req.Channel)
		return nil, ErrorInternal
	}
	p.mapOnly()
	f := &mapFlow{c: c, p: p, busy: true}
	c.mu.Lock()
	if c.subs == nil {
		c.mu.Unlock()
		return nil, DisconnectConnectionClosed
	}
	if c.mapFlows == nil {
		c.mapFlows = make(map[string]*mapFlow)
	}
	c.mapFlows[req.Channel] = f
	c.mu.Unlock()
	if d := p.opts.Map.SubscribeCatchUpTimeout; d > 0 {
		f.timerMu.Lock()
		f.timer = time.AfterFunc(d, f.timedOut)
		f.timerMu.Unlock()
	}
	return f, nil
}

// mapOnly sets what a map subscription is from its namespace's mode:
// positioned and recoverable with a stream; never in presence or
// join/leave, which are the stream broker's and know nothing of map
// channels.
func (p *subscribeParams) mapOnly() {
	has := p.opts.Map.Mode.HasStream()
	p.recoverable, p.positioned = has, has
	p.presence, p.joinLeave, p.pushJL = false, false, false
	p.recover, p.rejectUnrecovered = false, false
}

// replaceMapFlow ends the channel's flow in progress, if any, for a new
// one; a flow reading a page is not replaced (113).
func (c *Client) replaceMapFlow(channel string) error {
	c.mu.Lock()
	f := c.mapFlows[channel]
	if f != nil && f.busy {
		c.mu.Unlock()
		c.node.log.Info("map subscribe: a page asked for while another is read", "client", c.id, "channel", channel)
		return ErrorConcurrentPagination
	}
	c.mu.Unlock()
	if f != nil {
		c.endMapFlow(f, false)
	}
	return nil
}

// resumeMapFlow returns the channel's flow, marked busy, or nil when there
// is none.
func (c *Client) resumeMapFlow(channel string) (*mapFlow, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.mapFlows[channel]
	if f == nil {
		return nil, nil
	}
	if f.busy {
		c.node.log.Info("map subscribe: a page asked for while another is read", "client", c.id, "channel", channel)
		return nil, ErrorConcurrentPagination
	}
	f.busy = true
	return f, nil
}

// settleMapFlow ends f after its request failed or went live (s), else
// makes it ready for the next request.
func (c *Client) settleMapFlow(f *mapFlow, s *subscription, err error) {
	if err != nil || s != nil {
		c.endMapFlow(f, s != nil)
		return
	}
	c.mu.Lock()
	f.busy = false
	c.mu.Unlock()
}

// endMapFlow removes f from the client's flows; unless it went live, its
// pending subscription, if any, is dropped.
func (c *Client) endMapFlow(f *mapFlow, live bool) {
	f.stopTimer()
	c.mu.Lock()
	if c.mapFlows[f.p.channel] == f {
		delete(c.mapFlows, f.p.channel)
	}
	c.mu.Unlock()
	if !live && f.pending != nil {
		c.dropSubscription(f.pending)
		f.pending = nil
	}
}

// endMapFlowOf ends the channel's flow, if any: the client unsubscribed.
func (c *Client) endMapFlowOf(channel string) {
	c.mu.Lock()
	f := c.mapFlows[channel]
	c.mu.Unlock()
	if f != nil {
		c.endMapFlow(f, false)
	}
}

// timedOut closes the connection of a flow still in progress when its
// catch-up time is over: a subscriber that cannot keep up with the
// state would otherwise hold its pages (and held changes) for ever.
func (f *mapFlow) timedOut() {
	c := f.c
	c.mu.Lock()
	current := c.mapFlows[f.p.channel] == f
	c.mu.Unlock()
	if !current {
		return
	}
	c.node.log.Info("map subscribe: catch-up timeout", "client", c.id, "channel", f.p.channel,
		"timeout", f.p.opts.Map.SubscribeCatchUpTimeout)
	c.Disconnect(DisconnectSlow)
}

// mapStatePage reads a state page of f's channel and answers it, or goes
// live on the last page.
func (c *Client) mapStatePage(req *protocol.SubscribeRequest, f *mapFlow) (*protocol.SubscribeResult, *subscription, error) {
	n := c.node
	m := &f.p.opts.Map
	if !m.Mode.HasStream() && f.pending == nil {
		s, err := c.attachMap(f, m.LiveTransitionMaxPublicationLimit)
		if err != nil {
			return nil, nil, err
		}
		f.pending = s
	}
	limit := m.pageLimit(int(req.Limit))
	so := broker.MapStateOptions{Map: m.brokerOptions(), Cursor: req.Cursor, Limit: limit}
	if f.captured {
		if req.Epoch != "" && req.Epoch != f.frozen.Epoch {
			n.log.Debug("map subscribe: state page of another epoch", "client", c.id, "channel", f.p.channel)
			return nil, nil, ErrorUnrecoverablePosition
		}
		rev := f.frozen
		so.Revision = &rev
	}
	page, err := n.mapBroker.ReadState(c.ctx, f.p.channel, so)
	if err != nil {
		return nil, nil, c.mapReadError("state", f.p.channel, err)
	}
	if !f.captured {
		f.frozen, f.captured = page.Position, true
	}
	entries := c.mapEntries(f, page.Entries)
	if page.Cursor == "" && (!m.Mode.HasStream() || page.Position.Offset <= f.frozen.Offset+uint64(limit)) {
		return c.mapGoLive(req, f, f.frozen, entries, false)
	}
	return &protocol.SubscribeResult{
		Type: req.Type, Phase: mapPhaseState, Cursor: page.Cursor,
		Epoch: f.frozen.Epoch, Offset: f.frozen.Offset, State: entries,
	}, nil, nil
}

// mapEntries are the state entries of a page the client is given: those
// written at or before the frozen position (later ones come with the
// stream, and would otherwise come twice) that pass its filter.
func (c *Client) mapEntries(f *mapFlow, pubs []*broker.Publication) []*protocol.Publication {
	out := make([]*protocol.Publication, 0, len(pubs))
	for _, pub := range pubs {
		if pub.Offset <= f.frozen.Offset && f.p.filter.Match(pub.Tags) {
			out = append(out, toProtoPub(pub))
		}
	}
	c.mapPayloads(f.p, out)
	return out
}

// mapChanges are the changes of a stream page or catch-up the client is
// given: those that pass its filter.
func (c *Client) mapChanges(p subscribeParams, pubs []*broker.Publication) []*protocol.Publication {
	if len(pubs) == 0 {
		return nil
	}
	out := make([]*protocol.Publication, 0, len(pubs))
	for _, pub := range pubs {
		if p.filter.Match(pub.Tags) {
			out = append(out, toProtoPub(pub))
		}
	}
	c.mapPayloads(p, out)
	return out
}

// mapPayloads makes the values of a JSON subscriber with delta
// compression JSON strings, as its live changes carry them: it keeps
// each key's value as sent, the base of the key's next delta. Removals
// carry none.
func (c *Client) mapPayloads(p subscribeParams, pubs []*protocol.Publication) {
	if !p.delta || c.proto != protocol.TypeJSON {
		return
	}
	for _, pub := range pubs {
		if !pub.Removed {
			pub.Data = protocol.AppendJSONString(nil, pub.Data)
		}
	}
}

// mapStreamPage reads a page of f's stream after the client's position,
// or goes live when the client is within a page of the top.
func (c *Client) mapStreamPage(req *protocol.SubscribeRequest, f *mapFlow) (*protocol.SubscribeResult, *subscription, error) {
	n := c.node
	m := &f.p.opts.Map
	if !m.Mode.HasStream() {
		n.log.Info("map subscribe: stream phase in a channel without a stream", "client", c.id, "channel", f.p.channel)
		return nil, nil, ErrorBadRequest
	}
	since := broker.StreamPosition{Offset: req.Offset, Epoch: req.Epoch}
	if f.captured && since.Epoch != f.frozen.Epoch {
		n.log.Debug("map subscribe: stream page of another epoch", "client", c.id, "channel", f.p.channel)
		return nil, nil, ErrorUnrecoverablePosition
	}
	if !f.topCaptured {
		top, err := n.mapBroker.ReadStream(c.ctx, f.p.channel, broker.MapStreamOptions{Map: m.brokerOptions()})
		if err != nil {
			return nil, nil, c.mapReadError("stream", f.p.channel, err)
		}
		if top.Position.Epoch != since.Epoch {
			n.log.Debug("map subscribe: the stream's epoch changed", "client", c.id, "channel", f.p.channel)
			return nil, nil, ErrorUnrecoverablePosition
		}
		f.streamTop, f.topCaptured = top.Position.Offset, true
	}
	limit := m.pageLimit(int(req.Limit))
	if req.Phase == mapPhaseLive || since.Offset+uint64(limit) >= f.streamTop {
		return c.mapGoLive(req, f, since, nil, req.Recover)
	}
	page, err := n.mapBroker.ReadStream(c.ctx, f.p.channel, broker.MapStreamOptions{
		Map: m.brokerOptions(), Filter: broker.HistoryFilter{Since: &since, Limit: limit},
	})
	if err != nil {
		return nil, nil, c.mapReadError("stream", f.p.channel, err)
	}
	if len(page.Pubs) == 0 || page.Pubs[0].Offset != since.Offset+1 {
		n.log.Debug("map subscribe: changes after the position are no longer in the stream", "client", c.id,
			"channel", f.p.channel, "offset", since.Offset)
		return nil, nil, ErrorUnrecoverablePosition
	}
	return &protocol.SubscribeResult{
		Type: req.Type, Phase: mapPhaseStream, Epoch: page.Position.Epoch,
		Offset: page.Pubs[len(page.Pubs)-1].Offset, Publications: c.mapChanges(f.p, page.Pubs),
	}, nil, nil
}

// mapReadError logs a failed read of a map channel's state or stream
// for a subscriber and gives the error it is answered with.
func (c *Client) mapReadError(what, channel string, err error) error {
	n := c.node
	switch {
	case errors.Is(err, broker.ErrBadCursor):
		n.log.Info("map subscribe: bad state cursor", "client", c.id, "channel", channel, "error", err)
		return ErrorBadRequest
	case errors.Is(err, broker.ErrUnrecoverablePosition):
		n.log.Debug("map subscribe: position of another epoch", "client", c.id, "channel", channel, "read", what)
		return ErrorUnrecoverablePosition
	case errors.Is(err, broker.ErrNotAvailable):
		n.logBrokerFailure("history", slog.LevelWarn, "map subscribe: map broker not available", "channel", channel, "read", what, "error", err)
	default:
		n.logBrokerFailure("history", slog.LevelError, "map subscribe: read failed", "channel", channel, "read", what, "error", err)
	}
	return ErrorInternal
}

// attachMap registers f's subscription, pending, with the client and the
// hub: the channel's changes are held for it from then on, up to
// holdLimit of them (0: no bound).
func (c *Client) attachMap(f *mapFlow, holdLimit int) (*subscription, error) {
	s := c.newSubscription(f.p)
	s.holdLimit = holdLimit
	if err := c.register(s); err != nil {
		return nil, err
	}
	return s, nil
}

// mapGoLive makes f's subscription live: attached (if it is not yet),
// caught up from since with what the stream holds (with a stream), and
// answered with state, the catch-up and the top it reaches. The caller
// enqueues the result, then activates the subscription.
func (c *Client) mapGoLive(req *protocol.SubscribeRequest, f *mapFlow, since broker.StreamPosition, state []*protocol.Publication, recovering bool) (*protocol.SubscribeResult, *subscription, error) {
	s := f.pending
	if s == nil {
		var err error
		if s, err = c.attachMap(f, 0); err != nil {
			return nil, nil, err
		}
	}
	f.pending = nil // from here on, a failure drops s below
	if s.overflowed() {
		// More changes came while the client paged than it may catch up
		// on: it loads the state again.
		c.node.log.Info("map subscribe: too many changes while paging; the client loads the state again", "client", c.id,
			"channel", f.p.channel, "limit", s.holdLimit)
		c.dropSubscription(s)
		return nil, nil, ErrorUnrecoverablePosition
	}
	res := &protocol.SubscribeResult{Type: req.Type, Phase: mapPhaseLive, State: state, Delta: f.p.delta, Id: s.channelID, Data: f.p.data}
	top := since
	if f.p.opts.Map.Mode.HasStream() {
		pubs, t, err := c.mapCatchUp(f, since)
		if err != nil {
			c.dropSubscription(s)
			return nil, nil, err
		}
		top, res.Publications, res.Recoverable, res.Positioned = t, pubs, true, true
	}
	if err := f.p.expiry(res); err != nil {
		c.dropSubscription(s)
		return nil, nil, err
	}
	res.Epoch, res.Offset = top.Epoch, top.Offset
	s.epoch = top.Epoch
	s.offset.Store(top.Offset)
	if recovering {
		res.WasRecovering, res.Recovered = true, true
		c.node.obs.Recovered(true, len(res.Publications))
	}
	c.startExpiry(s, f.p)
	c.observeStart(s)
	return res, s, nil
}

// mapCatchUp reads the changes after since up to the stream's top, for a
// subscription attached already: every change after the top reaches it
// live. More than the namespace's LiveTransitionMaxPublicationLimit, or a
// stream that no longer holds them all, or of another epoch, is 112: the
// client loads the state again.
func (c *Client) mapCatchUp(f *mapFlow, since broker.StreamPosition) ([]*protocol.Publication, broker.StreamPosition, error) {
	n := c.node
	m := &f.p.opts.Map
	limit := m.LiveTransitionMaxPublicationLimit
	res, err := n.mapBroker.ReadStream(c.ctx, f.p.channel, broker.MapStreamOptions{
		Map: m.brokerOptions(), Filter: broker.HistoryFilter{Since: &since, Limit: limit + 1},
	})
	if err != nil {
		return nil, res.Position, c.mapReadError("stream", f.p.channel, err)
	}
	top := res.Position
	switch {
	case top.Epoch != since.Epoch:
		n.log.Debug("map subscribe: the stream's epoch changed", "client", c.id, "channel", f.p.channel)
		return nil, top, ErrorUnrecoverablePosition
	case len(res.Pubs) > limit:
		n.log.Info("map subscribe: too many changes to catch up; the client loads the state again", "client", c.id,
			"channel", f.p.channel, "limit", limit)
		return nil, top, ErrorUnrecoverablePosition
	case !continuous(res.Pubs, since.Offset, top.Offset):
		n.log.Debug("map subscribe: changes after the position are no longer in the stream", "client", c.id,
			"channel", f.p.channel, "offset", since.Offset, "top", top.Offset)
		return nil, top, ErrorUnrecoverablePosition
	}
	return c.mapChanges(f.p, res.Pubs), top, nil
}
