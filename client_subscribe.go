package gyre

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/filter"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/token"
)

// Bits of SubscribeRequest.flag, the subscription features a client asks
// for.
const (
	// subscribeFlagCompaction offers channel compaction: the subscribe
	// result may carry an id that then stands for the channel name in the
	// subscription's pushes.
	subscribeFlagCompaction int64 = 1
	// subscribeFlagRejectUnrecovered asks for error 112 when recovery
	// cannot return every missed publication, instead of a subscription
	// with recovered=false: the client then reloads its state and
	// subscribes again from there.
	subscribeFlagRejectUnrecovered int64 = 2
)

// subscribeParams is what was decided about a subscription before it
// starts.
type subscribeParams struct {
	channel     string
	opts        *ChannelOptions
	chanInfo    []byte
	data        []byte
	expireAt    int64
	recoverable bool
	positioned  bool
	presence    bool
	joinLeave   bool // publish join/leave of this client
	pushJL      bool // send join/leave pushes to this client
	serverSide  bool
	// serverRefresh: the expiry is kept from the client and the node's
	// sub-refresh handler prolongs the subscription.
	serverRefresh bool
	// recovery request
	recover bool
	since   broker.StreamPosition
	// rejectUnrecovered: answer 112 rather than recovered=false.
	rejectUnrecovered bool
	// recoverRefused: the client asked to recover a subscription that has
	// no stream to recover from (a pattern); the result says recovery
	// failed.
	recoverRefused bool
	// filter is the client's tags filter ANDed with any the server
	// enforces; delta asks for delta compression.
	filter *filter.Filter
	delta  bool
	// compact: the subscriber's pushes carry the channel's number instead
	// of its name.
	compact bool
	// scope is set when channel is a pattern: its pattern scope, and name
	// the pattern within it.
	scope, name string
	// stream, when set, feeds the subscription (SubscribeReply.Stream).
	stream *subStream
}

// patternOnly makes the subscription a pattern subscription: it follows
// the publications of many channels, so whatever needs one stream is off
// (recovery, positioning, delta, compaction) and, since it is not in any
// one channel, so are presence and join/leave.
func (p *subscribeParams) patternOnly(rules *channelRules) {
	p.scope, p.name = rules.patternScope(p.channel)
	p.recoverable, p.positioned, p.delta, p.compact = false, false, false, false
	p.presence, p.joinLeave, p.pushJL = false, false, false
}

// enforceFilter ANDs a filter the server decided (token claim or handler)
// with the client's, server's first. Delta compression is then off: a
// filtered subscriber does not see every publication a delta chains on.
func (p *subscribeParams) enforceFilter(tree *protocol.FilterNode) error {
	if tree == nil {
		return nil
	}
	f, err := filter.Compile(tree, filter.Unlimited)
	if err != nil {
		return err
	}
	p.filter = filter.And(f, p.filter)
	p.delta = false
	return nil
}

// tokenFilter reads the filter of a subscription token: a tree (claim
// "tf") or an expression (claim "filter").
func tokenFilter(tree []byte, expr string) (*protocol.FilterNode, error) {
	switch {
	case len(tree) > 0 && expr != "":
		return nil, errors.New("both tf and filter claims")
	case len(tree) > 0:
		return filter.ParseTreeJSON(tree)
	case expr != "":
		return filter.Parse(expr)
	}
	return nil, nil
}

// subscribeCmd handles a subscribe command. The reply is enqueued here,
// not returned, because the subscription must be activated right after it:
// publications held meanwhile go out after the reply, never before.
func (c *Client) subscribeCmd(id uint32, req *protocol.SubscribeRequest) bool {
	if req.Type == SubscriptionTypeSharedPoll.protoType() {
		return c.sharedPollSubscribeCmd(id, req)
	}
	if req.Type != 0 {
		return c.mapSubscribeCmd(id, req)
	}
	p, err := c.authorizeSubscribe(req)
	if err != nil {
		p.stream.end()
		return c.finishCommand("subscribe", id, nil, err)
	}
	s, res, err := c.startSubscription(p)
	if err != nil {
		p.stream.end()
		return c.finishCommand("subscribe", id, nil, err)
	}
	s.activateAfter(s.offset.Load(), func() { c.enqueueReply("subscribe", &protocol.Reply{Id: id, Subscribe: res}) })
	s.stream.start(s)
	return c.state.Load() != stateClosed
}

// authorizeSubscribe checks a client's subscribe request against the
// channel rules, tokens and handlers.
func (c *Client) authorizeSubscribe(req *protocol.SubscribeRequest) (subscribeParams, error) {
	n := c.node
	rules := n.rules.Load()
	opts, pattern, err := rules.lookupSubscribe(req.Channel)
	if err != nil {
		if errors.Is(err, ErrorBadRequest) {
			n.log.Info("malformed channel pattern", "client", c.id, "channel", req.Channel)
		}
		return subscribeParams{}, err
	}
	if err := c.checkSubscribeLimits(req.Channel); err != nil {
		return subscribeParams{}, err
	}
	if req.Delta != "" && !slices.Contains(opts.AllowedDeltaTypes, req.Delta) {
		return subscribeParams{}, ErrorBadRequest
	}
	if req.Delta != "" && pattern {
		// A delta applies to the publication before it in one stream; a
		// pattern subscriber follows many.
		n.log.Info("delta compression refused on a pattern subscription", "client", c.id, "channel", req.Channel)
		return subscribeParams{}, ErrorBadRequest
	}
	if want := opts.SubscriptionType.protoType(); req.Type != want {
		// A client asking for another kind than the namespace's would
		// misread its pushes (and a map's need a state phase first).
		n.log.Info("subscription type does not match the namespace", "client", c.id, "channel", req.Channel,
			"type", req.Type, "namespace_type", want)
		return subscribeParams{}, ErrorBadRequest
	}
	p := subscribeParams{channel: req.Channel, opts: opts, delta: req.Delta != ""}
	if req.Tf != nil {
		if !opts.AllowTagsFilter || req.Delta != "" {
			return p, ErrorBadRequest
		}
		f, err := filter.Compile(req.Tf, n.cfg.TagsFilterLimits)
		if err != nil {
			n.log.Info("invalid tags filter", "client", c.id, "channel", req.Channel, "error", err)
			return p, ErrorBadRequest
		}
		p.filter = f
	}
	p.compact = opts.AllowChannelCompaction && req.Flag&subscribeFlagCompaction != 0 && !c.declineCompaction
	p.recoverable = opts.ForceRecovery || (opts.AllowRecovery && req.Recoverable)
	p.positioned = opts.HistoryEnabled() && (opts.ForcePositioning || (opts.AllowPositioning && req.Positioned))
	p.presence = opts.Presence
	p.joinLeave = opts.JoinLeave
	p.pushJL = opts.JoinLeave && (opts.ForcePushJoinLeave || req.JoinLeave)
	user := c.UserID()

	handled := false
	if h := n.handlers.subscribe; h != nil {
		rep, err := h(c.ctx, c, SubscribeEvent{Channel: req.Channel, Token: req.Token, Data: req.Data, Type: subscriptionTypeOf(req.Type)})
		switch {
		case errors.Is(err, ErrNotHandled):
		case err != nil:
			return p, err
		default:
			handled = true
			if err := p.applyReply(rep, req); err != nil {
				n.log.Error("invalid tags filter from the subscribe handler", "channel", req.Channel, "error", err)
				return p, ErrorInternal
			}
			p.serverRefresh = p.serverRefresh && n.handlers.subRefresh != nil
		}
	}

	switch {
	case handled:
	case req.Token != "":
		st, err := c.verifySubscribeToken(req.Token, req.Channel)
		if err != nil {
			return p, err
		}
		p.chanInfo, p.data, p.expireAt = st.Info, st.Data, st.ExpireAt
		p.override(tokenOverride(st.Override))
		tree, err := tokenFilter(st.TagsFilter, st.FilterExpr)
		if err == nil {
			err = p.enforceFilter(tree)
		}
		if err != nil {
			// A claim that does not parse makes a malformed token,
			// answered as one that does not verify.
			n.log.Info("invalid tags filter in a subscription token", "client", c.id, "channel", req.Channel, "error", err)
			return p, ErrorPermissionDenied
		}
	case n.cfg.Insecure:
	case rules.isPrivate(req.Channel):
		return p, ErrorPermissionDenied
	default:
		if limited, allowed := rules.userAllowed(req.Channel, user); limited {
			if !opts.AllowUserLimitedChannels || !allowed {
				return p, ErrorPermissionDenied
			}
			break
		}
		if !opts.AllowSubscribeForClient || (user == "" && !opts.AllowSubscribeForAnonymous) {
			return p, ErrorPermissionDenied
		}
	}
	if pattern {
		p.patternOnly(rules)
		p.recoverRefused = req.Recover
	}
	if p.stream != nil {
		p.streamOnly()
	}
	if p.recoverable || p.positioned {
		p.positioned = true
	}
	if req.Recover && p.recoverable {
		p.recover = true
		p.since = broker.StreamPosition{Offset: req.Offset, Epoch: req.Epoch}
		p.rejectUnrecovered = req.Flag&subscribeFlagRejectUnrecovered != 0
	}
	return p, nil
}

// applyReply takes what a subscribe handler decided.
func (p *subscribeParams) applyReply(rep SubscribeReply, req *protocol.SubscribeRequest) error {
	opts := p.opts
	if rep.Stream != nil {
		// First, so that a refusal below still closes the stream.
		p.stream = newSubStream(rep.Stream)
	}
	p.chanInfo, p.data, p.expireAt = rep.ChanInfo, rep.Data, rep.ExpireAt
	p.serverRefresh = rep.ServerSideRefresh
	if err := p.enforceFilter(rep.Filter); err != nil {
		return err
	}
	p.recoverable = p.recoverable || (rep.EnableRecovery && opts.HistoryEnabled())
	p.positioned = p.positioned || (rep.EnablePositioning && opts.HistoryEnabled())
	p.presence = p.presence || rep.EnablePresence
	p.joinLeave = p.joinLeave || rep.EnableJoinLeave
	p.pushJL = p.pushJL || (rep.EnableJoinLeave && req.JoinLeave)
	p.override(rep.Override)
	return nil
}

// override applies a handler's per-subscription channel options.
func (p *subscribeParams) override(o *SubscribeOverride) {
	if o == nil {
		return
	}
	history := p.opts.HistoryEnabled()
	if o.Presence != nil {
		p.presence = *o.Presence
	}
	if o.JoinLeave != nil {
		p.joinLeave = *o.JoinLeave
		if !p.joinLeave {
			p.pushJL = false
		}
	}
	if o.ForcePushJoinLeave != nil {
		p.pushJL = *o.ForcePushJoinLeave && p.joinLeave
	}
	if o.ForceRecovery != nil {
		p.recoverable = *o.ForceRecovery && history
	}
	if o.ForcePositioning != nil {
		p.positioned = *o.ForcePositioning && history
	}
}

func (c *Client) checkSubscribeLimits(channel string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.subs[channel]; ok {
		return ErrorAlreadySubscribed
	}
	if lim := c.node.cfg.ChannelLimit; lim > 0 && len(c.subs) >= lim {
		return ErrorLimitExceeded
	}
	return nil
}

// verifySubscribeToken checks a subscription token: its sub must be this
// connection's user and its channel the channel asked for. The answers are
// Centrifugo's, which the SDKs act on: a token that does not verify is
// refused with 103 and the connection stays (the backend handed out a
// broken token, and other subscriptions need not suffer); one that is good
// but for the time asks for a fresh token with 109; a well-signed token for
// another channel or user means the client misuses what it was given, and
// the connection is closed with 3500.
func (c *Client) verifySubscribeToken(tok, channel string) (token.SubscribeToken, error) {
	n := c.node
	v := n.subVerifier.Load()
	if v == nil {
		n.log.Info("subscription token refused: no token keys configured", "client", c.id, "channel", channel)
		return token.SubscribeToken{}, ErrorPermissionDenied
	}
	st, err := v.VerifySubscribeToken(tok, false)
	if err != nil {
		if tokenTimeError(err) {
			return st, ErrorTokenExpired
		}
		n.log.Info("invalid subscription token", "client", c.id, "channel", channel, "error", err)
		return st, ErrorPermissionDenied
	}
	if user := c.UserID(); st.Channel != channel || st.UserID != user {
		n.log.Info("subscription token for another channel or user", "client", c.id, "channel", channel,
			"token_channel", st.Channel, "user", user, "token_user", st.UserID)
		return st, DisconnectInvalidToken
	}
	return st, nil
}

// subscribeServerSide subscribes the client to a channel the server chose
// (token channels, connecting handler, personal channel).
// o, when not nil, holds options the connecting handler gave.
func (c *Client) subscribeServerSide(channel string, req *protocol.SubscribeRequest, o *SubscribeOptions) (*subscription, *protocol.SubscribeResult, error) {
	return c.subscribeServerSideWith(channel, req, o, 0)
}

// subscribeServerSideWith is subscribeServerSide with an expiry (Unix
// seconds, 0: never). A server-side subscription cannot be refreshed by
// the client: the node's sub-refresh handler, when there is one, is asked
// at expiry; without one the subscription ends.
func (c *Client) subscribeServerSideWith(channel string, req *protocol.SubscribeRequest, o *SubscribeOptions, expireAt int64) (*subscription, *protocol.SubscribeResult, error) {
	rules := c.node.rules.Load()
	opts, pattern, err := rules.lookupSubscribe(channel)
	if err != nil {
		return nil, nil, err
	}
	if opts.SubscriptionType.IsMap() || opts.SubscriptionType == SubscriptionTypeSharedPoll {
		// A map subscriber loads the state with commands of its own, a
		// shared-poll one tracks keys with signatures: the server
		// cannot subscribe them.
		c.node.log.Info("server-side subscription to a map or shared-poll channel refused", "client", c.id, "channel", channel, "type", opts.SubscriptionType)
		return nil, nil, ErrorBadRequest
	}
	if err := c.checkSubscribeLimits(channel); err != nil {
		return nil, nil, err
	}
	p := subscribeParams{
		channel:     channel,
		opts:        opts,
		serverSide:  true,
		recoverable: opts.ForceRecovery || opts.AllowRecovery,
		presence:    opts.Presence,
		joinLeave:   opts.JoinLeave,
		pushJL:      opts.JoinLeave,
	}
	p.positioned = p.recoverable || (opts.HistoryEnabled() && opts.ForcePositioning)
	if o != nil {
		p.chanInfo, p.data = o.ChanInfo, o.Data
		p.override(o.Override)
		p.positioned = p.positioned || p.recoverable
	}
	if expireAt > 0 {
		p.expireAt = expireAt
		p.serverRefresh = c.node.handlers.subRefresh != nil
	}
	if pattern {
		p.patternOnly(rules)
		p.recoverRefused = req != nil && req.Recover
	}
	if req != nil && req.Recover && p.recoverable {
		p.recover = true
		p.since = broker.StreamPosition{Offset: req.Offset, Epoch: req.Epoch}
	}
	return c.startSubscription(p)
}

// startSubscription registers a pending subscription, joins presence and
// computes the subscribe result (with recovery). The caller enqueues the
// result and then activates the subscription.
func (c *Client) startSubscription(p subscribeParams) (*subscription, *protocol.SubscribeResult, error) {
	n := c.node
	s := c.newSubscription(p)
	if err := c.register(s); err != nil {
		return nil, nil, err
	}
	res := &protocol.SubscribeResult{Data: p.data, Delta: p.delta, Id: s.channelID}
	if p.recoverRefused {
		// Like any recovery that cannot return what was missed:
		// recovered (and recoverable) false, never 112, which would
		// have a client that asked for it (subscribe flag 2) reload and
		// ask again for ever.
		res.WasRecovering = true
	}
	if err := p.expiry(res); err != nil {
		c.dropSubscription(s)
		return nil, nil, err
	}
	if p.positioned || p.recoverable {
		if err := c.fillStreamPosition(s, p, res); err != nil {
			c.dropSubscription(s)
			return nil, nil, err
		}
	}
	if p.presence {
		if err := n.presence.AddPresence(p.channel, c.id, c.clientInfo(p.chanInfo)); err != nil {
			n.logBrokerFailure("presence", slog.LevelError, "add presence", "channel", p.channel, "error", err)
		}
	}
	if s.mapPresence {
		c.addMapPresence(s)
	}
	if p.joinLeave {
		if err := n.broker.PublishJoin(p.channel, c.clientInfo(p.chanInfo)); err != nil {
			n.logBrokerFailure("publish", slog.LevelError, "publish join", "channel", p.channel, "error", err)
		} else {
			n.obs.BrokerSent("join", 1)
		}
	}
	c.startExpiry(s, p)
	c.observeStart(s)
	return s, res, nil
}

// expiry tells the client in res when its subscription expires, unless
// the server refreshes it; an expiry that passed already is
// ErrorTokenExpired.
func (p *subscribeParams) expiry(res *protocol.SubscribeResult) error {
	if p.expireAt == 0 {
		return nil
	}
	ttl := p.expireAt - time.Now().Unix()
	if ttl <= 0 {
		return ErrorTokenExpired
	}
	if !p.serverRefresh {
		res.Expires, res.Ttl = true, uint32(ttl)
	}
	return nil
}

// startExpiry schedules the end (or the server-side refresh) of s, when
// p gave it an expiry.
func (c *Client) startExpiry(s *subscription, p subscribeParams) {
	if p.expireAt > 0 {
		s.serverRefresh = p.serverRefresh
		c.scheduleSubExpiry(s, p.expireAt)
	}
}

// newSubscription makes the subscription p decided, not registered yet.
func (c *Client) newSubscription(p subscribeParams) *subscription {
	s := &subscription{
		client:        c,
		channel:       p.channel,
		opts:          p.opts,
		isMap:         p.opts.SubscriptionType.IsMap(),
		mapPresence:   p.scope == "" && p.opts.hasMapPresence(),
		pushJoinLeave: p.pushJL,
		positioned:    p.positioned,
		recoverable:   p.recoverable,
		serverSide:    p.serverSide,
		chanInfo:      p.chanInfo,
		presence:      p.presence,
		joinLeave:     p.joinLeave,
		filter:        p.filter,
		delta:         p.delta,
		shape:         shapeReply,
		stream:        p.stream,
		// Set before s is in c.subs: a Disconnect may take it from
		// there and detach it at once.
		scope:   p.scope,
		nameLen: int32(len(p.name)),
	}
	switch {
	case c.uni:
		s.shape = shapeUni
	case p.compact:
		s.shape = shapeCompact
	}
	return s
}

// register adds s, pending, to the client's subscriptions and to the hub
// (subscribing the broker to its channel when it is the first here); on
// an error s is in neither. The channel limit is checked again here: map
// subscriptions are authorized long before they get here.
func (c *Client) register(s *subscription) error {
	n := c.node
	c.mu.Lock()
	if c.subs == nil {
		c.mu.Unlock()
		return DisconnectConnectionClosed
	}
	if _, ok := c.subs[s.channel]; ok {
		c.mu.Unlock()
		return ErrorAlreadySubscribed
	}
	if lim := n.cfg.ChannelLimit; lim > 0 && len(c.subs) >= lim {
		c.mu.Unlock()
		return ErrorLimitExceeded
	}
	c.subs[s.channel] = s
	c.mu.Unlock()

	if err := n.attach(s); err != nil {
		s.close()
		c.forget(s)
		return ErrorInternal
	}
	if s.state.Load() == subClosed {
		// The connection closed meanwhile, and its detach of s may have
		// come before the attach: leave nothing in the hub.
		n.detach(s)
		return DisconnectConnectionClosed
	}
	return nil
}

// observeStart counts s as a subscription of its client (Observer's
// Subscribed), unless it ended already.
func (c *Client) observeStart(s *subscription) {
	if !c.hidden && s.observed.CompareAndSwap(obsNew, obsCounted) {
		c.node.obs.Subscribed(c.connInfo())
	}
}

// observeEnd counts the end of s, if its start was counted; server tells
// that the server ended it with a push of code.
func (c *Client) observeEnd(s *subscription, code uint32, server bool) {
	if s.observed.Swap(obsEnded) == obsCounted {
		c.node.obs.Unsubscribed(c.connInfo(), code, server)
	}
}

// fillStreamPosition sets the stream position of a subscribe result and,
// when the client recovers, the publications it missed. A client that
// asked to be refused rather than told it lost state (subscribe flag
// rejectUnrecovered) gets ErrorUnrecoverablePosition instead of a result
// with recovered=false.
func (c *Client) fillStreamPosition(s *subscription, p subscribeParams, res *protocol.SubscribeResult) error {
	n := c.node
	res.Positioned = p.positioned
	res.Recoverable = p.recoverable
	if !p.recover {
		_, top, err := n.broker.History(p.channel, broker.HistoryOptions{MetaTTL: p.opts.HistoryMetaTTL})
		if err != nil {
			n.logBrokerFailure("history", slog.LevelError, "stream top", "channel", p.channel, "error", err)
			return ErrorInternal
		}
		res.Offset, res.Epoch = top.Offset, top.Epoch
		s.epoch = top.Epoch
		s.offset.Store(top.Offset)
		return nil
	}
	res.WasRecovering = true
	missed := n.recoverStream
	if p.opts.ForceRecoveryMode == "cache" {
		missed = n.recoverLatest
	}
	pubs, top, recovered, err := missed(p)
	if errors.Is(err, errCacheEmptyFailed) {
		return ErrorInternal
	}
	if err != nil {
		n.logBrokerFailure("history", slog.LevelError, "recovery history", "channel", p.channel, "error", err)
		return ErrorInternal
	}
	res.Offset, res.Epoch = top.Offset, top.Epoch
	s.epoch = top.Epoch
	// The subscriber is at the top once the result is out: what was held
	// meanwhile up to there is in the result or was missed on purpose.
	s.offset.Store(top.Offset)
	if !recovered {
		if n.log.Enabled(context.Background(), slog.LevelDebug) {
			n.log.Debug("recovery incomplete", "client", c.id, "channel", p.channel,
				"since_offset", p.since.Offset, "since_epoch", p.since.Epoch, "top_offset", top.Offset, "top_epoch", top.Epoch)
		}
		if p.rejectUnrecovered {
			n.obs.Recovered(false, 0)
			return ErrorUnrecoverablePosition
		}
	}
	res.Recovered = recovered
	if recovered {
		// The client's own position: the SDK moves it through the
		// publications as it hands them to the application, so one that
		// stops halfway (unsubscribed from a handler) recovers the rest
		// next time instead of resuming at the top.
		res.Offset = p.since.Offset
	}
	if len(pubs) > 0 {
		res.Publications = make([]*protocol.Publication, 0, len(pubs))
	}
	for _, pub := range pubs {
		// What the filter keeps from the subscriber live stays away on
		// recovery too.
		if p.filter.Match(pub.Tags) {
			res.Publications = append(res.Publications, toProtoPub(pub))
		}
	}
	c.deltaPayloads(p, res.Publications)
	n.obs.Recovered(recovered, len(res.Publications))
	return nil
}

// recoverStream returns the publications after p.since and whether they
// are all of them; none when they are not, since publications past a gap
// would read as the continuation of the client's state. Recovered only when the stream is the client's (same
// epoch), nothing between its offset and the top was evicted, and no more
// than RecoveryMaxPublicationLimit were missed. Offset 0 with no epoch
// asks for the stream from its start, whatever its epoch.
func (n *Node) recoverStream(p subscribeParams) (pubs []*broker.Publication, top broker.StreamPosition, recovered bool, err error) {
	limit := n.cfg.RecoveryMaxPublicationLimit
	since := p.since
	f := broker.HistoryFilter{Since: &since, Limit: limit + 1}
	if since == (broker.StreamPosition{}) {
		f.Since = nil
	}
	pubs, top, err = n.broker.History(p.channel, broker.HistoryOptions{Filter: f, MetaTTL: p.opts.HistoryMetaTTL})
	switch {
	case errors.Is(err, broker.ErrUnrecoverablePosition):
		return nil, top, false, nil
	case err != nil:
		return nil, top, false, err
	}
	if len(pubs) > limit || !continuous(pubs, since.Offset, top.Offset) {
		return nil, top, false, nil
	}
	return pubs, top, true, nil
}

// continuous reports whether pubs, in offset order, are exactly the
// publications after offset after up to top: a broker returns what it
// still holds, with no word about what it evicted by size or age.
func continuous(pubs []*broker.Publication, after, top uint64) bool {
	if top < after || uint64(len(pubs)) != top-after {
		return false
	}
	for i, pub := range pubs {
		if pub.Offset != after+uint64(i)+1 {
			return false
		}
	}
	return true
}

// errCacheEmptyFailed: the cache empty handler failed (and said why in
// the log); the subscription gets 100.
var errCacheEmptyFailed = errors.New("cache empty handler failed")

// recoverLatest is recovery in cache mode: the client is given the
// channel's latest publication, the whole state it needs, unless it holds
// it already; also when not recovered. Recovered means the stream is the
// one the client knew (or it knew none).
func (n *Node) recoverLatest(p subscribeParams) ([]*broker.Publication, broker.StreamPosition, bool, error) {
	f := broker.HistoryFilter{Limit: 1, Reverse: true}
	pubs, top, err := n.broker.History(p.channel, broker.HistoryOptions{Filter: f, MetaTTL: p.opts.HistoryMetaTTL})
	if err != nil {
		return nil, top, false, err
	}
	if len(pubs) == 0 && p.opts.CacheEmptyEvents && n.handlers.cacheEmpty != nil {
		populated, err := n.handlers.cacheEmpty(context.Background(), p.channel)
		if err != nil {
			n.log.Info("cache empty handler failed: the subscription is refused with 100", "channel", p.channel, "error", err)
			return nil, top, false, errCacheEmptyFailed
		}
		if populated {
			if pubs, top, err = n.broker.History(p.channel, broker.HistoryOptions{Filter: f, MetaTTL: p.opts.HistoryMetaTTL}); err != nil {
				return nil, top, false, err
			}
		}
	}
	if p.since.Epoch == top.Epoch && p.since.Offset == top.Offset {
		pubs = nil
	}
	return pubs, top, p.since.Epoch == top.Epoch || p.since.Epoch == "", nil
}

// deltaPayloads makes recovered publications of a JSON subscriber with
// delta compression carry their data as a JSON string, as every
// publication of such a subscription does.
func (c *Client) deltaPayloads(p subscribeParams, pubs []*protocol.Publication) {
	if !p.delta || c.proto != protocol.TypeJSON {
		return
	}
	for _, pub := range pubs {
		pub.Data = protocol.AppendJSONString(nil, pub.Data)
	}
}

// dropSubscription undoes a subscription that failed to start.
func (c *Client) dropSubscription(s *subscription) {
	s.close()
	c.forget(s)
	c.node.detach(s)
}

// attach adds s to the hub and, when it is the first subscriber of its
// channel (or of its pattern scope) here, subscribes the broker; s is in
// neither when it fails. The channel's subLock serializes the broker
// subscription with the hub change, so that a last unsubscribe and a
// first subscribe cannot reach the broker in the opposite order (the
// pattern hub has its own lock for that).
func (n *Node) attach(s *subscription) error {
	if s.scope != "" {
		if err := n.attachPattern(s); err != nil {
			n.logBrokerFailure("subscribe", slog.LevelError, "broker pattern scope subscribe", "pattern", s.channel, "scope", s.scope, "error", err)
			return err
		}
		return nil
	}
	lock := n.hub.subLock(s.channel)
	lock.Lock()
	defer lock.Unlock()
	if !n.hub.addSubscription(s) {
		return nil
	}
	if err := n.deliveryOf(s).Subscribe(s.channel); err != nil {
		n.logBrokerFailure("subscribe", slog.LevelError, "broker subscribe", "channel", s.channel, "error", err)
		n.detachLocked(s)
		return err
	}
	if n.occupancy != nil && s.opts.StateEvents {
		n.occupancy.set(broker.OccupancyChannel, s.channel, true, nil)
	}
	return nil
}

// detach removes s from the hub and, when it was the last subscriber of
// its channel (or of its pattern scope) here, unsubscribes the broker.
func (n *Node) detach(s *subscription) {
	if s.scope != "" {
		n.detachPattern(s)
		return
	}
	lock := n.hub.subLock(s.channel)
	lock.Lock()
	defer lock.Unlock()
	n.detachLocked(s)
}

// detachLocked is detach of a channel's subscriber with the channel's
// subLock held.
func (n *Node) detachLocked(s *subscription) {
	if n.hub.removeSubscription(s) {
		if n.occupancy != nil && s.opts.StateEvents {
			n.occupancy.set(broker.OccupancyChannel, s.channel, false, nil)
		}
		if err := n.deliveryOf(s).Unsubscribe(s.channel); err != nil {
			n.logBrokerFailure("unsubscribe", slog.LevelError, "broker unsubscribe", "channel", s.channel, "error", err)
		}
	}
}

// channelDelivery is what delivers a channel's publications to this node:
// a Broker, or a MapBroker for map channels.
type channelDelivery interface {
	Subscribe(channel string) error
	Unsubscribe(channel string) error
}

// deliveryOf returns what delivers the publications of s's channel.
func (n *Node) deliveryOf(s *subscription) channelDelivery {
	if s.isMap {
		return n.mapBroker
	}
	return n.broker
}

// forget removes s from the client's subscriptions, if it is still there.
func (c *Client) forget(s *subscription) {
	c.mu.Lock()
	if c.subs != nil && c.subs[s.channel] == s {
		delete(c.subs, s.channel)
	}
	c.mu.Unlock()
}

func (c *Client) unsubscribeCmd(req *protocol.UnsubscribeRequest) (*protocol.Reply, error) {
	c.endMapFlowOf(req.Channel)
	c.mu.Lock()
	s := c.subs[req.Channel]
	if s != nil {
		delete(c.subs, req.Channel)
	}
	c.mu.Unlock()
	if s != nil {
		c.leave(s, UnsubscribeCodeClient, "client", false)
	}
	return &protocol.Reply{Unsubscribe: &protocol.UnsubscribeResult{}}, nil
}

// Unsubscribe removes the client from a channel on the server's decision
// and tells the client with an unsubscribe push.
func (c *Client) Unsubscribe(channel string, code uint32, reason string) {
	c.mu.Lock()
	s := c.subs[channel]
	if s != nil {
		delete(c.subs, channel)
	}
	c.mu.Unlock()
	if s != nil {
		c.leave(s, code, reason, true)
	}
}

// unsubscribeSub is Unsubscribe of s itself: nothing happens when s is no
// longer the client's subscription to its channel (the client left, or
// subscribed again since).
func (c *Client) unsubscribeSub(s *subscription, code uint32, reason string) {
	c.mu.Lock()
	current := c.subs != nil && c.subs[s.channel] == s
	if current {
		delete(c.subs, s.channel)
	}
	c.mu.Unlock()
	if current {
		c.leave(s, code, reason, true)
	}
}

// leave ends a subscription that was already removed from c.subs.
func (c *Client) leave(s *subscription, code uint32, reason string, push bool) {
	n := c.node
	s.close()
	c.mu.Lock()
	if s.expTimer != nil {
		s.expTimer.Stop()
	}
	c.mu.Unlock()
	if s.poll != nil {
		n.polls.leave(s)
	} else {
		n.detach(s)
	}
	if s.presence {
		if err := n.presence.RemovePresence(s.channel, c.id, c.UserID()); err != nil {
			n.logBrokerFailure("presence", slog.LevelError, "remove presence", "channel", s.channel, "error", err)
		}
	}
	if s.joinLeave {
		if err := n.broker.PublishLeave(s.channel, c.clientInfo(s.chanInfo)); err != nil {
			n.logBrokerFailure("publish", slog.LevelError, "publish leave", "channel", s.channel, "error", err)
		} else {
			n.obs.BrokerSent("leave", 1)
		}
	}
	c.leaveMap(s)
	c.observeEnd(s, code, push)
	if push {
		c.enqueuePush(&protocol.Push{Channel: s.channel, Unsubscribe: &protocol.Unsubscribe{Code: code, Reason: reason}})
	}
	if h := n.handlers.unsubscribe; h != nil && !c.hidden {
		h(c, UnsubscribeEvent{Channel: s.channel, Code: code, Reason: reason})
	}
}

// refreshPresence renews the presence entries of the client's channels.
func (c *Client) refreshPresence() {
	c.mu.Lock()
	var subs []*subscription
	for _, s := range c.subs {
		if s.presence || s.mapPresence {
			subs = append(subs, s)
		}
	}
	c.mu.Unlock()
	for _, s := range subs {
		if s.mapPresence {
			c.addMapPresence(s)
		}
		if !s.presence {
			continue
		}
		if err := c.node.presence.AddPresence(s.channel, c.id, c.clientInfo(s.chanInfo)); err != nil {
			c.node.logBrokerFailure("presence", slog.LevelError, "refresh presence", "channel", s.channel, "error", err)
		}
	}
}

func (c *Client) subRefreshCmd(req *protocol.SubRefreshRequest) (*protocol.Reply, error) {
	if req.Type != subRefreshToken {
		return c.trackCmd(req)
	}
	c.mu.Lock()
	s := c.subs[req.Channel]
	c.mu.Unlock()
	if s == nil || req.Token == "" {
		return nil, ErrorBadRequest
	}
	st, err := c.verifySubscribeToken(req.Token, req.Channel)
	if err != nil {
		return nil, err
	}
	res := &protocol.SubRefreshResult{}
	if st.ExpireAt > 0 {
		ttl := st.ExpireAt - time.Now().Unix()
		if ttl <= 0 {
			return nil, ErrorTokenExpired
		}
		res.Expires, res.Ttl = true, uint32(ttl)
	}
	c.scheduleSubExpiry(s, st.ExpireAt)
	return &protocol.Reply{SubRefresh: res}, nil
}

// scheduleSubExpiry ends a subscription with unsubscribe 2501 when its
// token is not refreshed within the grace period after expireAt (0: never).
func (c *Client) scheduleSubExpiry(s *subscription, expireAt int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.expireAt = expireAt
	if s.expTimer != nil {
		s.expTimer.Stop()
		s.expTimer = nil
	}
	if expireAt == 0 {
		return
	}
	if s.serverRefresh {
		s.expTimer = time.AfterFunc(time.Until(time.Unix(expireAt, 0)), func() { c.refreshSubOnServer(s) })
		return
	}
	d := time.Until(time.Unix(expireAt, 0)) + c.node.cfg.ExpiredSubCloseDelay
	s.expTimer = time.AfterFunc(d, func() {
		c.mu.Lock()
		expired := c.subs[s.channel] == s && s.expireAt > 0 && time.Now().Unix() >= s.expireAt
		c.mu.Unlock()
		if expired {
			c.Unsubscribe(s.channel, UnsubscribeCodeExpired, "subscription expired")
		}
	})
}

// refreshSubOnServer asks the sub-refresh handler whether an expired
// subscription lives on. A failure of the handler keeps the subscription
// and asks again after the node's ServerSideRefreshRetry.
func (c *Client) refreshSubOnServer(s *subscription) {
	c.mu.Lock()
	current := c.subs[s.channel] == s
	c.mu.Unlock()
	if !current || c.state.Load() != stateConnected {
		return
	}
	rep, err := c.node.handlers.subRefresh(c.ctx, c, SubRefreshEvent{Channel: s.channel})
	if err != nil {
		var d *Disconnect
		if errors.As(err, &d) {
			c.Disconnect(d)
			return
		}
		c.node.log.Log(context.Background(), handlerFailureLevel(err), "server-side subscription refresh failed, retrying", "client", c.id, "channel", s.channel, "error", err)
		c.mu.Lock()
		if c.subs[s.channel] == s && s.expTimer != nil {
			s.expTimer = time.AfterFunc(c.node.cfg.ServerSideRefreshRetry, func() { c.refreshSubOnServer(s) })
		}
		c.mu.Unlock()
		return
	}
	if rep.Expired || (rep.ExpireAt > 0 && rep.ExpireAt <= time.Now().Unix()) {
		c.Unsubscribe(s.channel, UnsubscribeCodeExpired, "subscription expired")
		return
	}
	if rep.Info != nil {
		c.mu.Lock()
		s.chanInfo = rep.Info
		c.mu.Unlock()
	}
	c.scheduleSubExpiry(s, rep.ExpireAt)
}
