package gyre

import (
	"slices"
	"time"

	"github.com/gyrehq/gyre/protocol"
)

// A client's side of shared-poll channels: the subscribe (type 4), which
// joins no broker channel, and the sub_refresh commands that track and
// untrack keys.

// sub_refresh types.
const (
	subRefreshToken   = 0
	subRefreshTrack   = 1
	subRefreshUntrack = 2
)

// sharedPollSubscribeCmd subscribes the client to a shared-poll channel.
// Keys come later, with track; the reply carries the channel's epoch.
func (c *Client) sharedPollSubscribeCmd(id uint32, req *protocol.SubscribeRequest) bool {
	if req.Delta != "" {
		// Values are pushed whole: a delta asked for is declined
		// (delta false in the result), not refused.
		req = req.CloneVT()
		req.Delta = ""
	}
	p, err := c.authorizeSubscribe(req)
	if err != nil {
		p.stream.end()
		return c.finishCommand("subscribe", id, nil, err)
	}
	if p.stream != nil {
		// A stream proxy feeds publications, which shared-poll
		// subscribers do not take.
		p.stream.end()
		c.node.log.Info("stream proxy refused on a shared-poll channel", "client", c.id, "channel", req.Channel)
		return c.finishCommand("subscribe", id, nil, ErrorNotAvailable)
	}
	// Values are pushed whole: no delta, no positions, no filter; and no
	// presence, which a tracking client does not join.
	p.delta, p.positioned, p.recoverable, p.recover, p.filter = false, false, false, false, nil
	p.presence, p.joinLeave, p.pushJL, p.compact = false, false, false, false
	s := c.newSubscription(p)
	res := &protocol.SubscribeResult{Type: req.Type, Data: p.data, Epoch: c.node.polls.epochOf(req.Channel, p.opts.SharedPoll)}
	s.poll = &pollSub{epoch: res.Epoch, keys: make(map[string]trackedKey)}
	if err := p.expiry(res); err != nil {
		return c.finishCommand("subscribe", id, nil, err)
	}
	c.mu.Lock()
	switch _, dup := c.subs[s.channel]; {
	case c.subs == nil:
		err = DisconnectConnectionClosed
	case dup:
		err = ErrorAlreadySubscribed
	case c.node.cfg.ChannelLimit > 0 && len(c.subs) >= c.node.cfg.ChannelLimit:
		err = ErrorLimitExceeded
	default:
		c.subs[s.channel] = s
	}
	c.mu.Unlock()
	if err != nil {
		return c.finishCommand("subscribe", id, nil, err)
	}
	s.state.Store(subActive)
	c.startExpiry(s, p)
	c.observeStart(s)
	c.enqueueReply("subscribe", &protocol.Reply{Id: id, Subscribe: res})
	return c.state.Load() != stateClosed
}

// trackCmd handles sub_refresh of type track or untrack.
func (c *Client) trackCmd(req *protocol.SubRefreshRequest) (*protocol.Reply, error) {
	n := c.node
	c.mu.Lock()
	s := c.subs[req.Channel]
	c.mu.Unlock()
	if s == nil || s.poll == nil {
		return nil, ErrorBadRequest
	}
	if req.Type == subRefreshUntrack {
		if len(req.Untrack) == 0 {
			return nil, ErrorBadRequest
		}
		n.polls.untrack(s, req.Untrack)
		return &protocol.Reply{SubRefresh: &protocol.SubRefreshResult{}}, nil
	}
	if req.Type != subRefreshTrack {
		return nil, ErrorBadRequest
	}
	batches := make([]TrackBatch, 0, len(req.Track))
	keys := 0
	for _, b := range req.Track {
		tb := TrackBatch{Signature: b.Signature, Keys: make([]string, len(b.Items))}
		for i, it := range b.Items {
			if it.Key == "" {
				n.log.Info("track of an empty key", "client", c.id, "channel", req.Channel)
				return nil, ErrorBadRequest
			}
			tb.Keys[i] = it.Key
		}
		keys += len(b.Items)
		batches = append(batches, tb)
	}
	if keys == 0 {
		return nil, ErrorBadRequest
	}
	h := n.handlers.track
	if h == nil {
		return nil, ErrorNotAvailable
	}
	rep, err := h(c.ctx, c, TrackEvent{Channel: req.Channel, Batches: batches})
	if err != nil {
		return nil, err
	}
	if len(rep.ExpireAt) != len(batches) {
		n.log.Error("track handler answered another number of batches than asked", "channel", req.Channel, "batches", len(batches), "answered", len(rep.ExpireAt))
		return nil, ErrorInternal
	}
	// A key in several batches takes the last one's version and expiry.
	at := make(map[string]int, keys)
	items := make([]trackItem, 0, keys)
	minExp := int64(0)
	for i, b := range req.Track {
		exp := rep.ExpireAt[i]
		if exp > 0 && (minExp == 0 || exp < minExp) {
			minExp = exp
		}
		for _, it := range b.Items {
			ti := trackItem{key: it.Key, version: it.Version, expireAt: exp}
			if j, ok := at[it.Key]; ok {
				items[j] = ti
				continue
			}
			at[it.Key] = len(items)
			items = append(items, ti)
		}
	}
	// Keys in untrack were signed with the others but the client no
	// longer wants them (a replay of an old signature's batch).
	if len(req.Untrack) > 0 {
		drop := make(map[string]struct{}, len(req.Untrack))
		for _, k := range req.Untrack {
			drop[k] = struct{}{}
		}
		items = slices.DeleteFunc(items, func(it trackItem) bool { _, ok := drop[it.key]; return ok })
	}
	if err := n.polls.track(s, items, req.Untrack); err != nil {
		if err == ErrorLimitExceeded {
			n.log.Info("track refused: too many keys", "client", c.id, "channel", req.Channel, "max", s.opts.SharedPoll.maxKeys())
		}
		return nil, err
	}
	res := &protocol.SubRefreshResult{}
	if minExp > 0 {
		res.Expires = true
		res.Ttl = uint32(max(minExp-time.Now().Unix(), 0))
	}
	return &protocol.Reply{SubRefresh: res}, nil
}
