package gyre

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/token"
)

// connectCmd authenticates the connection, registers it and subscribes it
// to its server-side channels.
func (c *Client) connectCmd(id uint32, req *protocol.ConnectRequest) bool {
	res, subs, incomplete, err := c.connect(req)
	if err != nil {
		if c.uni {
			err = uniConnectError(err)
		}
		return c.finishCommand("connect", id, nil, err)
	}
	// The check runs before the result goes out: a client that saw its
	// connect succeed may connect again at once, elsewhere, and a check
	// still to come would find that newer connection and close it.
	if !c.keepSingleConnection() {
		return false
	}
	if c.uni {
		c.enqueuePush(&protocol.Push{Connect: &protocol.Connect{
			Client: res.Client, Version: res.Version, Data: res.Data, Subs: res.Subs,
			Expires: res.Expires, Ttl: res.Ttl, Ping: res.Ping, Pong: res.Pong, Node: res.Node,
		}})
	} else {
		c.enqueueReply("connect", &protocol.Reply{Id: id, Connect: res})
	}
	c.afterConnect(subs)
	if incomplete {
		// The client cannot subscribe a server-side channel itself:
		// left without it, it would miss the channel's publications
		// without a word. Connecting again later gets it.
		go c.Disconnect(DisconnectServerError)
	}
	return c.state.Load() != stateClosed
}

// uniConnectError turns a refused connect of a unidirectional client into
// a disconnect: such a client reads no error replies, only pushes.
func uniConnectError(err error) error {
	var d *Disconnect
	if errors.As(err, &d) {
		return d
	}
	switch e := toError(err); e.Code {
	case ErrorTokenExpired.Code:
		return DisconnectExpired
	case ErrorUnauthorized.Code, ErrorPermissionDenied.Code:
		return DisconnectPermissionDenied
	case ErrorLimitExceeded.Code:
		return DisconnectConnectionLimit
	case ErrorTooManyRequests.Code:
		return DisconnectTooManyRequests
	default:
		if e.Temporary {
			return DisconnectServerError
		}
		return DisconnectBadRequest
	}
}

// Connect runs a connect request for a unidirectional transport: the
// result goes out as a connect push. It returns false when the connection
// was refused (and closed).
func (c *Client) Connect(req *protocol.ConnectRequest) bool {
	if req == nil {
		req = &protocol.ConnectRequest{}
	}
	return c.connectCmd(1, req)
}

func (c *Client) afterConnect(subs []*subscription) {
	for _, s := range subs {
		s.activate(s.offset.Load())
	}
	if h := c.node.handlers.connect; h != nil {
		h(c)
	}
}

// keepSingleConnection, with SingleConnection, closes the user's other
// connections when presence in the personal channel (which now holds this
// one) counts more than one. Presence is what makes it work across nodes.
// It returns false when this connection had to be closed instead: without
// presence it cannot tell.
func (c *Client) keepSingleConnection() bool {
	n, user := c.node, c.UserID()
	if !n.cfg.SingleConnection || !n.cfg.SubscribeToUserPersonalChannel || user == "" {
		return true
	}
	ch := n.PersonalChannel(user)
	stats, err := n.PresenceStats(ch)
	if err != nil {
		n.log.Error("single connection: presence stats of the personal channel failed", "channel", ch, "user", user, "client", c.id, "error", err)
		c.Disconnect(DisconnectServerError)
		return false
	}
	if stats.NumClients < 2 {
		return true
	}
	if err := n.Disconnect(user, DisconnectConnectionLimit, ClientFilter{}, []string{c.id}); err != nil {
		n.log.Error("single connection: closing the user's other connections failed", "user", user, "client", c.id, "error", err)
		c.Disconnect(DisconnectServerError)
		return false
	}
	return true
}

// compactionBroken reports whether a client that names itself name on a
// connection of type t offers channel compaction without being able to
// use it. centrifuge-js (name "js") offers it on every subscribe, but its
// protobuf build decodes the 64-bit channel numbers into objects and
// compares them by identity, so it would drop every compacted push: such a
// client is given channel names (centrifuge-js 5.8; its JSON build and
// centrifuge-go in both formats are fine).
func compactionBroken(t protocol.Type, name string) bool {
	return t == protocol.TypeProtobuf && name == "js"
}

// connect decides the connection and builds its result. The returned
// subscriptions are pending until the result is enqueued. incomplete
// reports a server-side subscription that failed for a reason that passes
// (the broker unreachable).
func (c *Client) connect(req *protocol.ConnectRequest) (*protocol.ConnectResult, []*subscription, bool, error) {
	n := c.node
	if n.closing.Load() {
		return nil, nil, false, DisconnectShutdown
	}
	grant, err := c.grantFromToken(req.Token)
	if err != nil {
		return nil, nil, false, err
	}
	creds, meta := grant.creds, grant.meta
	if creds == nil && req.Token == "" {
		// Credentials of the context, if any, are copied: handlers may
		// change what they are given.
		if cc := credentialsFrom(c.ctx); cc != nil {
			cp := *cc
			creds = &cp
		}
	}
	var channels []string
	var replyData []byte
	var extraSubs map[string]SubscribeOptions
	if h := n.handlers.connecting; h != nil {
		e := ConnectingEvent{
			ClientID: c.id, Transport: c.transport.Name(), Protocol: c.proto, Token: req.Token, Credentials: creds,
			Data: req.Data, Name: req.Name, Version: req.Version, Headers: req.Headers,
		}
		for ch := range req.Subs {
			e.Channels = append(e.Channels, ch)
		}
		rep, err := h(c.ctx, e)
		if err != nil {
			return nil, nil, false, err
		}
		if rep.Credentials != nil {
			creds = rep.Credentials
		}
		replyData = rep.Data
		channels = append(channels, rep.Channels...)
		extraSubs = rep.Subscriptions
		if rep.Meta != nil {
			meta = rep.Meta
		}
		if rep.Context != nil {
			c.ctx = rep.Context
		}
	}
	if creds == nil {
		if !n.cfg.Insecure && !n.cfg.AllowAnonymousConnectWithoutToken {
			n.log.Info("connection without credentials refused", "client", c.id, "transport", c.transport.Name())
			return nil, nil, false, DisconnectBadRequest
		}
		creds = &Credentials{}
	}
	var personal string
	if n.cfg.SubscribeToUserPersonalChannel && creds.UserID != "" {
		personal = n.PersonalChannel(creds.UserID)
	}
	serverSubs := serverSubscriptions(channels, extraSubs, grant, personal)
	if err := c.checkServerSideChannelLimit(serverSubs, creds.UserID); err != nil {
		return nil, nil, false, err
	}
	if lim := n.cfg.ConnectionLimit; lim > 0 && int(n.hub.numConns.Load()) >= lim {
		return nil, nil, false, DisconnectConnectionLimit
	}
	if lim := n.cfg.UserConnectionLimit; lim > 0 && creds.UserID != "" && n.hub.userConnectionCount(creds.UserID) >= lim {
		return nil, nil, false, DisconnectConnectionLimit
	}

	c.mu.Lock()
	c.user = creds.UserID
	c.info = creds.Info
	c.expireAt = creds.ExpireAt
	c.subs = make(map[string]*subscription)
	c.declineCompaction = compactionBroken(c.proto, req.Name)
	c.sdk, c.versioned = clientNameIndex(req.Name), req.Version != ""
	c.mu.Unlock()

	res := &protocol.ConnectResult{
		Client:  c.id,
		Version: n.cfg.Version,
		Data:    replyData,
		Node:    n.id,
	}
	if n.cfg.PingInterval > 0 {
		res.Ping = uint32(n.cfg.PingInterval / time.Second)
		res.Pong = !c.uni
	}
	if st, ok := c.transport.(sessionTransport); ok {
		res.Session = st.Session()
	}
	if n.cfg.ConnectIncludeServerTime {
		// Clients use it to correct their clock when they compute token
		// expiry or show server times.
		res.Time = time.Now().UnixMilli()
	}
	if creds.ExpireAt > 0 {
		ttl := creds.ExpireAt - time.Now().Unix()
		if ttl <= 0 {
			return nil, nil, false, ErrorTokenExpired
		}
		// With server-side refresh the client is not asked to refresh:
		// the node asks its refresh handler when the time comes.
		if n.handlers.serverRefresh == nil {
			res.Expires = true
			res.Ttl = uint32(ttl)
		}
	}

	if !c.state.CompareAndSwap(stateConnecting, stateConnected) {
		return nil, nil, false, DisconnectConnectionClosed
	}
	// Counted at once: a close from now on counts the connection as
	// connected (Disconnected), whatever happens below.
	if !c.hidden {
		n.obs.Connected(c.connInfo())
	}
	c.mu.Lock()
	if c.staleTimer != nil {
		c.staleTimer.Stop()
		c.staleTimer = nil // an idle connection keeps no timer
	}
	// Under mu and only while connected: close swaps the state before it
	// takes mu, so either it sees limits here and releases them, or they
	// are never taken.
	if n.rates != nil && c.state.Load() == stateConnected {
		c.limits = n.rates.forClient(creds.UserID)
	}
	userInfo := c.info
	c.mu.Unlock()
	n.hub.addClient(c, userInfo)
	n.pinger.add(c)
	// Shutdown, or a close from another goroutine (the stale timer), may
	// have run between the state change and the registration above and
	// missed this client: undo the registration. Shutdown stores closing
	// before it walks the hub, so one of the two always sees the other.
	if n.closing.Load() || c.state.Load() == stateClosed {
		n.hub.removeClient(c)
		n.pinger.remove(c)
		return nil, nil, false, DisconnectShutdown
	}
	c.setMeta(meta)
	if creds.ExpireAt > 0 {
		c.renew(creds.ExpireAt, nil)
	}

	subs, incomplete := c.subscribeServerSubs(res, req.Subs, serverSubs)
	return res, subs, incomplete, nil
}

// subscribeServerSubs subscribes the connection to its server-side
// channels, adding each result to res. hints are the client's own
// requests for them (recovery positions). A channel that fails is left
// out of the result; incomplete reports that one failed for a reason that
// passes (the broker unreachable), for which the caller closes the
// connection so that the client connects again and gets it then.
func (c *Client) subscribeServerSubs(res *protocol.ConnectResult, hints map[string]*protocol.SubscribeRequest, serverSubs []serverSub) (subs []*subscription, incomplete bool) {
	var failed int
	var firstChannel string
	var firstErr error
	for _, ss := range serverSubs {
		s, sr, err := c.subscribeServerSide(ss.channel, hints[ss.channel], ss.opts)
		if err != nil {
			if failed == 0 {
				firstChannel, firstErr = ss.channel, err
			}
			failed++
			incomplete = incomplete || toError(err).Temporary
			continue
		}
		if res.Subs == nil {
			res.Subs = make(map[string]*protocol.SubscribeResult, len(serverSubs))
		}
		res.Subs[ss.channel] = sr
		subs = append(subs, s)
	}
	if failed > 0 {
		// One line per connect, not one per channel: a token may name many.
		c.node.log.Info("server-side subscriptions failed", "client", c.id, "user", c.UserID(),
			"failed", failed, "first_channel", firstChannel, "error", firstErr, "reconnect", incomplete)
	}
	return subs, incomplete
}

// serverSub is one server-side subscription a connect asks for, with the
// options its source gave (nil: the channel's own).
type serverSub struct {
	channel string
	opts    *SubscribeOptions
}

// serverSubscriptions gathers the server-side subscriptions of a connect
// from every source, each channel once, the first source naming it in
// this order giving its options: the connecting handler's channels, the
// token's channels, the personal channel, the handler's subscriptions and
// the token's subs.
func serverSubscriptions(handlerChannels []string, handlerSubs map[string]SubscribeOptions, g connectGrant, personal string) []serverSub {
	total := len(handlerChannels) + len(handlerSubs) + len(g.channels) + len(g.subs)
	if total == 0 && personal == "" {
		return nil
	}
	seen := make(map[string]struct{}, total+1)
	var out []serverSub
	add := func(ch string, o *SubscribeOptions) {
		if _, dup := seen[ch]; dup {
			return
		}
		seen[ch] = struct{}{}
		out = append(out, serverSub{channel: ch, opts: o})
	}
	for _, ch := range handlerChannels {
		add(ch, nil)
	}
	for _, ch := range g.channels {
		add(ch, nil)
	}
	if personal != "" {
		add(personal, nil)
	}
	for ch, o := range handlerSubs {
		add(ch, &o)
	}
	for ch, o := range g.subs {
		add(ch, &o)
	}
	return out
}

// checkServerSideChannelLimit refuses a connect whose server-side
// subscriptions alone are over the channel limit, as a client subscribing
// to them one by one would be: the connection could not hold them all,
// and keeping some of them would hide that from everyone.
func (c *Client) checkServerSideChannelLimit(subs []serverSub, user string) error {
	lim := c.node.cfg.ChannelLimit
	if lim <= 0 || len(subs) <= lim {
		return nil
	}
	c.node.log.Info("connect refused: server-side subscriptions over the channel limit", "client", c.id,
		"user", user, "channels", len(subs), "channel_limit", lim)
	c.mu.Lock()
	c.refusalLogged = true
	c.mu.Unlock()
	return DisconnectChannelLimit
}

// tokenTimeError reports whether a token failed only on time: exp passed or
// nbf still ahead. Such a token is never refused for good: the client is
// made to fetch a fresh one (109, or 3005 where an error reply would make
// the SDK give up).
func tokenTimeError(err error) bool {
	return errors.Is(err, token.ErrTokenExpired) || errors.Is(err, token.ErrTokenNotValidYet)
}

// connectGrant is what a verified connect token gives a connection: its
// credentials and meta, and the server-side subscriptions it names
// (channels, and subs with their own options). It lives only as long as
// the connect.
type connectGrant struct {
	creds    *Credentials
	meta     []byte
	channels []string
	subs     map[string]SubscribeOptions
}

// grantFromToken verifies a connect token. No token gives an empty grant;
// a bad one disconnects with 3500, one that is expired or not valid yet
// is 109.
func (c *Client) grantFromToken(tok string) (connectGrant, error) {
	if tok == "" {
		return connectGrant{}, nil
	}
	n := c.node
	v := n.verifier.Load()
	if v == nil {
		if n.handlers.connecting != nil {
			return connectGrant{}, nil
		}
		n.log.Info("connect token refused: no token keys configured", "client", c.id)
		return connectGrant{}, DisconnectInvalidToken
	}
	ct, err := v.VerifyConnectToken(tok, false)
	if err != nil {
		if tokenTimeError(err) {
			return connectGrant{}, ErrorTokenExpired
		}
		n.log.Info("invalid connect token", "client", c.id, "error", err)
		return connectGrant{}, DisconnectInvalidToken
	}
	if ct.UserID == "" && n.cfg.DisallowAnonymousConnectionTokens {
		return connectGrant{}, DisconnectPermissionDenied
	}
	g := connectGrant{
		creds:    &Credentials{UserID: ct.UserID, ExpireAt: ct.ExpireAt, Info: ct.Info},
		meta:     ct.Meta,
		channels: ct.Channels,
	}
	if len(ct.Subs) > 0 {
		g.subs = make(map[string]SubscribeOptions, len(ct.Subs))
		for ch, o := range ct.Subs {
			g.subs[ch] = SubscribeOptions{ChanInfo: o.Info, Data: o.Data, Override: tokenOverride(o.Override)}
		}
	}
	return g, nil
}

// renew sets the connection's credentials: expireAt (Unix seconds, 0 for
// never) and info (nil keeps the current one). An expiring connection is
// closed with 3005 when it is not refreshed within the grace period after
// expireAt.
func (c *Client) renew(expireAt int64, info []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireAt = expireAt
	if info != nil {
		c.info = info
	}
	if c.expTimer != nil {
		c.expTimer.Stop()
		c.expTimer = nil
	}
	if expireAt > 0 {
		if c.node.handlers.serverRefresh != nil {
			c.expTimer = time.AfterFunc(time.Until(time.Unix(expireAt, 0)), c.refreshOnServer)
			return
		}
		d := time.Until(time.Unix(expireAt, 0)) + c.node.cfg.ExpiredCloseDelay
		c.expTimer = time.AfterFunc(d, c.checkExpired)
	}
}

// refreshOnServer asks the server-side refresh handler whether an expired
// connection lives on. A failure of the handler does not end the
// connection: the question is asked again after the node's
// ServerSideRefreshRetry.
func (c *Client) refreshOnServer() {
	if c.state.Load() != stateConnected {
		return
	}
	rep, err := c.node.handlers.serverRefresh(c.ctx, c, RefreshEvent{})
	if err != nil {
		var d *Disconnect
		if errors.As(err, &d) {
			c.Disconnect(d)
			return
		}
		c.node.log.Log(context.Background(), handlerFailureLevel(err), "server-side refresh failed, retrying", "client", c.id, "error", err)
		c.mu.Lock()
		if c.expTimer != nil {
			c.expTimer = time.AfterFunc(c.node.cfg.ServerSideRefreshRetry, c.refreshOnServer)
		}
		c.mu.Unlock()
		return
	}
	if rep.Expired || (rep.ExpireAt > 0 && rep.ExpireAt <= time.Now().Unix()) {
		c.Disconnect(DisconnectExpired)
		return
	}
	c.setMeta(rep.Meta)
	c.renew(rep.ExpireAt, rep.Info)
}

// handlerFailureLevel is the level of the engine's line about a handler's
// failure: debug for an error that is ErrorInternal, which its source has
// logged already (a proxy logs its own failures, rate-limited), info for
// any other.
func handlerFailureLevel(err error) slog.Level {
	if errors.Is(err, ErrorInternal) {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

func (c *Client) checkExpired() {
	c.mu.Lock()
	exp := c.expireAt
	c.mu.Unlock()
	if exp > 0 && time.Now().Unix() >= exp {
		c.Disconnect(DisconnectExpired)
	}
}

// refreshCmd renews the connection's credentials from a new token.
func (c *Client) refreshCmd(req *protocol.RefreshRequest) (*protocol.Reply, error) {
	n := c.node
	var expireAt int64
	var info []byte
	if h := n.handlers.refresh; h != nil {
		rep, err := h(c.ctx, c, RefreshEvent{Token: req.Token})
		if err != nil {
			return nil, err
		}
		if rep.Expired {
			return nil, DisconnectExpired
		}
		expireAt, info = rep.ExpireAt, rep.Info
		c.setMeta(rep.Meta)
	} else {
		if req.Token == "" {
			return nil, ErrorBadRequest
		}
		v := n.verifier.Load()
		if v == nil {
			return nil, DisconnectInvalidToken
		}
		ct, err := v.VerifyConnectToken(req.Token, false)
		if err != nil {
			// Not 109 as on connect: the SDKs end a connection for good
			// on an error reply to refresh. After 3005 they reconnect,
			// connect answers 109, and they fetch a fresh token.
			if tokenTimeError(err) {
				n.log.Info("refresh token expired or not valid yet", "client", c.id, "error", err)
				return nil, DisconnectExpired
			}
			n.log.Info("invalid refresh token", "client", c.id, "error", err)
			return nil, DisconnectInvalidToken
		}
		if ct.UserID != c.UserID() {
			n.log.Info("refresh token of another user", "client", c.id, "user", c.UserID(), "token_user", ct.UserID)
			return nil, DisconnectInvalidToken
		}
		expireAt, info = ct.ExpireAt, ct.Info
	}
	res := &protocol.RefreshResult{Client: c.id, Version: n.cfg.Version}
	if expireAt > 0 {
		ttl := expireAt - time.Now().Unix()
		if ttl <= 0 {
			return nil, ErrorTokenExpired
		}
		res.Expires, res.Ttl = true, uint32(ttl)
	}
	c.renew(expireAt, info)
	return &protocol.Reply{Refresh: res}, nil
}

// tokenOverride turns a token's override claim into the engine's; nil when
// the claim overrides nothing.
func tokenOverride(o token.Override) *SubscribeOverride {
	if o == (token.Override{}) {
		return nil
	}
	return &SubscribeOverride{
		Presence:           o.Presence,
		JoinLeave:          o.JoinLeave,
		ForcePushJoinLeave: o.ForcePushJoinLeave,
		ForceRecovery:      o.ForceRecovery,
		ForcePositioning:   o.ForcePositioning,
	}
}
