package gyre

import (
	"errors"
	"log/slog"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/protocol"
)

// channelPermission applies a namespace's allow_*_for_{client,subscriber,
// anonymous} rule: the client may act when the channel allows any client,
// or any subscriber and it is subscribed; an anonymous client also needs
// the anonymous permission.
func (c *Client) channelPermission(channel string, forClient, forSubscriber, forAnonymous bool) bool {
	if c.node.cfg.Insecure {
		return true
	}
	c.mu.Lock()
	_, subscribed := c.subs[channel]
	user := c.user
	c.mu.Unlock()
	if !forClient && !(forSubscriber && subscribed) {
		return false
	}
	return user != "" || forAnonymous
}

func (c *Client) publishCmd(req *protocol.PublishRequest) (*protocol.Reply, error) {
	if req.Type != publishTypeStream {
		return c.mapPublishCmd(req)
	}
	n := c.node
	opts, err := n.rules.Load().lookup(req.Channel)
	if err != nil {
		if errors.Is(err, ErrorBadRequest) {
			n.log.Info("publish refused: the channel name is a pattern", "client", c.id, "channel", req.Channel)
		}
		return nil, err
	}
	switch {
	case opts.SubscriptionType.IsMap():
		n.log.Info("stream publish to a map channel", "client", c.id, "channel", req.Channel)
		return nil, ErrorBadRequest
	case opts.SubscriptionType == SubscriptionTypeSharedPoll:
		n.log.Info("stream publish to a shared-poll channel", "client", c.id, "channel", req.Channel)
		return nil, ErrorBadRequest
	}
	if st := c.streamOf(req.Channel); st != nil {
		// The subscription's stream takes the client's publications.
		if err := st.publish(c.ctx, req.Data); err != nil {
			return nil, err
		}
		return &protocol.Reply{Publish: &protocol.PublishResult{}}, nil
	}
	data := req.Data
	handled := false
	var po PublishOptions
	if h := n.handlers.publish; h != nil {
		rep, err := h(c.ctx, c, PublishEvent{Channel: req.Channel, Data: req.Data})
		switch {
		case errors.Is(err, ErrNotHandled):
		case err != nil:
			return nil, err
		default:
			handled = true
			if rep.Data != nil {
				data = rep.Data
			}
			po = PublishOptions{Tags: rep.Tags, SkipHistory: rep.SkipHistory, IdempotencyKey: rep.IdempotencyKey, UseDelta: rep.Delta,
				Version: rep.Version, VersionEpoch: rep.VersionEpoch}
		}
	}
	if !handled && !c.channelPermission(req.Channel, opts.AllowPublishForClient, opts.AllowPublishForSubscriber, opts.AllowPublishForAnonymous) {
		return nil, ErrorPermissionDenied
	}
	po.ClientInfo = c.clientInfo(c.chanInfoOf(req.Channel))
	item := [1]PublishItem{{Channel: req.Channel, Data: data, Options: po}}
	n.PublishMany(item[:])
	if err := item[0].Err; err != nil {
		return nil, err
	}
	return &protocol.Reply{Publish: &protocol.PublishResult{}}, nil
}

func (c *Client) presenceCmd(req *protocol.PresenceRequest) (*protocol.Reply, error) {
	n := c.node
	if err := c.checkPresenceAccess(req.Channel, n.handlers.presence); err != nil {
		return nil, err
	}
	m, err := n.presence.Presence(req.Channel)
	if err != nil {
		return nil, brokerError(n, "presence", req.Channel, err)
	}
	res := &protocol.PresenceResult{Presence: make(map[string]*protocol.ClientInfo, len(m))}
	for id, info := range m {
		res.Presence[id] = toProtoInfo(info)
	}
	return &protocol.Reply{Presence: res}, nil
}

func (c *Client) presenceStatsCmd(req *protocol.PresenceStatsRequest) (*protocol.Reply, error) {
	n := c.node
	if err := c.checkPresenceAccess(req.Channel, n.handlers.presenceStats); err != nil {
		return nil, err
	}
	st, err := n.presence.PresenceStats(req.Channel)
	if err != nil {
		return nil, brokerError(n, "presence stats", req.Channel, err)
	}
	return &protocol.Reply{PresenceStats: &protocol.PresenceStatsResult{NumClients: uint32(st.NumClients), NumUsers: uint32(st.NumUsers)}}, nil
}

func (c *Client) checkPresenceAccess(channel string, h ChannelPermissionHandler) error {
	opts, err := c.node.rules.Load().lookup(channel)
	if err != nil {
		return err
	}
	if !opts.Presence {
		return ErrorNotAvailable
	}
	if h != nil {
		return h(c.ctx, c, ChannelEvent{Channel: channel})
	}
	if !c.channelPermission(channel, opts.AllowPresenceForClient, opts.AllowPresenceForSubscriber, opts.AllowPresenceForAnonymous) {
		return ErrorPermissionDenied
	}
	return nil
}

func (c *Client) historyCmd(req *protocol.HistoryRequest) (*protocol.Reply, error) {
	n := c.node
	opts, err := n.rules.Load().lookup(req.Channel)
	if err != nil {
		return nil, err
	}
	if !opts.HistoryEnabled() {
		return nil, ErrorNotAvailable
	}
	if h := n.handlers.history; h != nil {
		if err := h(c.ctx, c, ChannelEvent{Channel: req.Channel}); err != nil {
			return nil, err
		}
	} else if !c.channelPermission(req.Channel, opts.AllowHistoryForClient, opts.AllowHistoryForSubscriber, opts.AllowHistoryForAnonymous) {
		return nil, ErrorPermissionDenied
	}
	limit := int(req.Limit)
	if limit < 0 || limit > n.cfg.HistoryMaxPublicationLimit {
		limit = n.cfg.HistoryMaxPublicationLimit
	}
	filter := broker.HistoryFilter{Limit: limit, Reverse: req.Reverse}
	if req.Since != nil {
		filter.Since = &broker.StreamPosition{Offset: req.Since.Offset, Epoch: req.Since.Epoch}
	}
	pubs, top, err := n.broker.History(req.Channel, broker.HistoryOptions{Filter: filter, MetaTTL: opts.HistoryMetaTTL})
	if err != nil {
		if errors.Is(err, broker.ErrUnrecoverablePosition) {
			return nil, ErrorUnrecoverablePosition
		}
		return nil, brokerError(n, "history", req.Channel, err)
	}
	res := &protocol.HistoryResult{Epoch: top.Epoch, Offset: top.Offset, Publications: make([]*protocol.Publication, 0, len(pubs))}
	for _, p := range pubs {
		res.Publications = append(res.Publications, toProtoPub(p))
	}
	return &protocol.Reply{History: res}, nil
}

func (c *Client) rpcCmd(req *protocol.RPCRequest) (*protocol.Reply, error) {
	h := c.node.handlers.rpc
	if h == nil {
		// RPC is a feature this server does not offer (108), not a method
		// the client got wrong; centrifuge-js's own tests expect 108 too.
		return nil, ErrorNotAvailable
	}
	rep, err := h(c.ctx, c, RPCEvent{Method: req.Method, Data: req.Data})
	if errors.Is(err, ErrNotHandled) {
		return nil, ErrorNotAvailable
	}
	if err != nil {
		return nil, err
	}
	return &protocol.Reply{Rpc: &protocol.RPCResult{Data: rep.Data}}, nil
}

// brokerError logs a broker failure of a client's command (op) and maps it
// to the client's error.
func brokerError(n *Node, op, channel string, err error) error {
	kind := "history"
	if op != "history" {
		kind = "presence"
	}
	if errors.Is(err, broker.ErrNotAvailable) {
		n.logBrokerFailure(kind, slog.LevelWarn, op+": broker not available", "channel", channel, "error", err)
		return ErrorInternal
	}
	if errors.Is(err, broker.ErrNotSupported) {
		n.logBrokerFailure(kind, slog.LevelWarn, op+": not supported by the broker", "channel", channel, "error", err)
		return ErrorNotAvailable
	}
	n.logBrokerFailure(kind, slog.LevelError, op+" failed", "channel", channel, "error", err)
	return ErrorInternal
}
