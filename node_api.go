package gyre

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/internal/controlpb"
	"github.com/gyrehq/gyre/protocol"
)

// Types shared with brokers, named here for library users.
type (
	// ClientInfo describes a connection in a channel.
	ClientInfo = broker.ClientInfo
	// Publication is one message of a channel's stream.
	Publication = broker.Publication
	// StreamPosition is a place in a channel's stream.
	StreamPosition = broker.StreamPosition
	// PresenceStats counts a channel's clients and users.
	PresenceStats = broker.PresenceStats
)

// History returns publications of a channel. limit 0 returns only the
// stream top, -1 everything kept; since, when set, returns what came
// after it (ErrorUnrecoverablePosition when it is gone).
func (n *Node) History(channel string, limit int, since *StreamPosition, reverse bool) ([]*Publication, StreamPosition, error) {
	chOpts, err := n.rules.Load().lookup(channel)
	if err != nil {
		return nil, StreamPosition{}, err
	}
	if !chOpts.HistoryEnabled() {
		return nil, StreamPosition{}, ErrorNotAvailable
	}
	pubs, sp, err := n.broker.History(channel, broker.HistoryOptions{
		Filter:  broker.HistoryFilter{Since: since, Limit: limit, Reverse: reverse},
		MetaTTL: chOpts.HistoryMetaTTL,
	})
	if errors.Is(err, broker.ErrUnrecoverablePosition) {
		return nil, sp, ErrorUnrecoverablePosition
	}
	if err != nil {
		return nil, sp, fmt.Errorf("gyre: history of %q: %w", channel, err)
	}
	return pubs, sp, nil
}

// RemoveHistory drops a channel's saved publications.
func (n *Node) RemoveHistory(channel string) error {
	if _, err := n.rules.Load().lookup(channel); err != nil {
		return err
	}
	if err := n.broker.RemoveHistory(channel); err != nil {
		return fmt.Errorf("gyre: remove history of %q: %w", channel, err)
	}
	return nil
}

// Presence returns who is in a channel, by client id.
func (n *Node) Presence(channel string) (map[string]*ClientInfo, error) {
	chOpts, err := n.rules.Load().lookup(channel)
	if err != nil {
		return nil, err
	}
	if !chOpts.Presence {
		return nil, ErrorNotAvailable
	}
	m, err := n.presence.Presence(channel)
	if err != nil {
		return nil, fmt.Errorf("gyre: presence of %q: %w", channel, err)
	}
	return m, nil
}

// PresenceStats counts the clients and users in a channel.
func (n *Node) PresenceStats(channel string) (PresenceStats, error) {
	chOpts, err := n.rules.Load().lookup(channel)
	if err != nil {
		return PresenceStats{}, err
	}
	if !chOpts.Presence {
		return PresenceStats{}, ErrorNotAvailable
	}
	st, err := n.presence.PresenceStats(channel)
	if err != nil {
		return st, fmt.Errorf("gyre: presence stats of %q: %w", channel, err)
	}
	return st, nil
}

// ClientFilter selects connections of a user: all of them, or one by
// client id, or those of one session.
type ClientFilter struct {
	ClientID string
	Session  string
}

func (f ClientFilter) match(c *Client) bool {
	return (f.ClientID == "" || f.ClientID == c.id) && (f.Session == "" || f.Session == c.Session())
}

// Subscribe subscribes every connection of user (on every node) to
// channel, server-side, and tells each client with a subscribe push.
// channel may be a pattern where its namespace allows wildcard
// subscriptions.
func (n *Node) Subscribe(user, channel string, f ClientFilter) error {
	return n.SubscribeWith(user, channel, f, ServerSubscribeOptions{})
}

// ServerSubscribeOptions are the options of a subscription made with
// Node.SubscribeWith.
type ServerSubscribeOptions struct {
	// ChanInfo, Data and Override as for a connecting handler's
	// subscriptions: Data goes out in the subscribe push.
	SubscribeOptions
	// ExpireAt, in Unix seconds, ends the subscription then unless the
	// node's sub-refresh handler prolongs it; 0: never.
	ExpireAt int64
	// RecoverSince, when set and the channel is recoverable, sends the
	// publications after this position right after the subscribe push.
	RecoverSince *StreamPosition
}

// SubscribeWith is Subscribe with per-subscription options.
func (n *Node) SubscribeWith(user, channel string, f ClientFilter, o ServerSubscribeOptions) error {
	if _, _, err := n.rules.Load().lookupSubscribe(channel); err != nil {
		return err
	}
	cmd := &controlpb.Subscribe{
		User: user, Channel: channel, Client: f.ClientID, Session: f.Session,
		Info: o.ChanInfo, Data: o.Data, ExpireAt: o.ExpireAt, Override: overrideToControl(o.Override),
	}
	if o.RecoverSince != nil {
		cmd.Recover, cmd.Offset, cmd.Epoch = true, o.RecoverSince.Offset, o.RecoverSince.Epoch
	}
	return n.sendControl(&controlpb.Command{Subscribe: cmd})
}

func overrideToControl(o *SubscribeOverride) *controlpb.SubscribeOverride {
	if o == nil {
		return nil
	}
	return &controlpb.SubscribeOverride{
		Presence: o.Presence, JoinLeave: o.JoinLeave, ForcePushJoinLeave: o.ForcePushJoinLeave,
		ForceRecovery: o.ForceRecovery, ForcePositioning: o.ForcePositioning,
	}
}

func overrideFromControl(o *controlpb.SubscribeOverride) *SubscribeOverride {
	if o == nil {
		return nil
	}
	return &SubscribeOverride{
		Presence: o.Presence, JoinLeave: o.JoinLeave, ForcePushJoinLeave: o.ForcePushJoinLeave,
		ForceRecovery: o.ForceRecovery, ForcePositioning: o.ForcePositioning,
	}
}

// serverSubscribeFromControl reads the options of a Subscribe command.
func serverSubscribeFromControl(s *controlpb.Subscribe) ServerSubscribeOptions {
	o := ServerSubscribeOptions{
		SubscribeOptions: SubscribeOptions{ChanInfo: s.Info, Data: s.Data, Override: overrideFromControl(s.Override)},
		ExpireAt:         s.ExpireAt,
	}
	if s.Recover {
		o.RecoverSince = &StreamPosition{Offset: s.Offset, Epoch: s.Epoch}
	}
	return o
}

func (n *Node) subscribeLocal(user, channel string, f ClientFilter, o ServerSubscribeOptions) {
	var req *protocol.SubscribeRequest
	if o.RecoverSince != nil {
		req = &protocol.SubscribeRequest{Recover: true, Offset: o.RecoverSince.Offset, Epoch: o.RecoverSince.Epoch}
	}
	for _, c := range n.hub.userClients(user) {
		if !f.match(c) || c.state.Load() != stateConnected {
			continue
		}
		s, res, err := c.subscribeServerSideWith(channel, req, &o.SubscribeOptions, o.ExpireAt)
		if errors.Is(err, ErrorAlreadySubscribed) {
			continue
		}
		if err != nil {
			n.log.Info("server-side subscribe failed", "client", c.id, "channel", channel, "error", err)
			continue
		}
		s.activateAfter(s.offset.Load(), func() {
			c.enqueuePush(subscribePush(channel, res))
			// The subscribe push has no room for publications: recovered
			// ones follow it as publication pushes, before anything live.
			for _, pub := range res.Publications {
				c.enqueuePush(&protocol.Push{Channel: channel, Pub: pub})
			}
		})
	}
}

// Unsubscribe removes every connection of user (on every node) from
// channel and tells each client with an unsubscribe push.
func (n *Node) Unsubscribe(user, channel string, f ClientFilter) error {
	return n.sendControl(&controlpb.Command{Unsubscribe: &controlpb.Unsubscribe{User: user, Channel: channel, Client: f.ClientID, Session: f.Session}})
}

func (n *Node) unsubscribeLocal(user, channel string, f ClientFilter) {
	for _, c := range n.hub.userClients(user) {
		if f.match(c) {
			c.Unsubscribe(channel, UnsubscribeCodeServer, "server unsubscribe")
		}
	}
}

// Disconnect closes every connection of user (on every node) with d,
// except clients whose ids are in whitelist. A nil d means 3503.
func (n *Node) Disconnect(user string, d *Disconnect, f ClientFilter, whitelist []string) error {
	if d == nil {
		d = DisconnectForceNoReconnect
	}
	return n.sendControl(&controlpb.Command{Disconnect: &controlpb.Disconnect{
		User: user, Client: f.ClientID, Session: f.Session, Whitelist: whitelist, Code: d.Code, Reason: d.Reason,
	}})
}

func (n *Node) disconnectLocal(user string, d *Disconnect, f ClientFilter, whitelist []string) {
	for _, c := range n.hub.userClients(user) {
		if f.match(c) && !slices.Contains(whitelist, c.id) {
			c.Disconnect(d)
		}
	}
}

// ChannelInfo describes a channel with subscribers on this node.
type ChannelInfo struct {
	NumClients int
}

// Channels lists channels with subscribers on this node whose names match
// pattern (path.Match syntax; "" matches all).
func (n *Node) Channels(pattern string) (map[string]ChannelInfo, error) {
	if pattern != "" {
		if _, err := path.Match(pattern, ""); err != nil {
			return nil, fmt.Errorf("gyre: channels pattern %q: %w", pattern, err)
		}
	}
	out := make(map[string]ChannelInfo)
	n.hub.eachChannel(func(ch string, num int) {
		if pattern != "" {
			if ok, _ := path.Match(pattern, ch); !ok {
				return
			}
		}
		out[ch] = ChannelInfo{NumClients: num}
	})
	return out, nil
}

// NodeInfo describes a running node.
type NodeInfo struct {
	ID          string
	Name        string
	Version     string
	NumClients  int
	NumUsers    int
	NumChannels int
	NumSubs     int
	Uptime      time.Duration
	// PublishRate is the publications per second the node published over
	// its last announce interval (5 seconds).
	PublishRate float64
	// MemoryBytes is the memory the process holds from the OS.
	MemoryBytes uint64
	// BrokerHealthy and BrokerError are what Healthy said. A node of an
	// older version that does not report them reads as not healthy with
	// no error.
	BrokerHealthy bool
	BrokerError   string
}

// LocalInfo describes this node.
func (n *Node) LocalInfo() NodeInfo {
	users, channels, subs := n.hub.stats()
	info := NodeInfo{
		ID:          n.id,
		Name:        n.name,
		Version:     n.cfg.Version,
		NumClients:  int(n.hub.numConns.Load()),
		NumUsers:    users,
		NumChannels: channels,
		NumSubs:     subs,
		Uptime:      time.Since(n.startedAt),
	}
	info.PublishRate, info.MemoryBytes = n.load.get()
	if err := n.Healthy(); err != nil {
		info.BrokerError = err.Error()
	} else {
		info.BrokerHealthy = true
	}
	return info
}

// Healthy returns nil when the node can serve: its broker and presence
// manager report no trouble (those that implement broker.HealthChecker).
func (n *Node) Healthy() error {
	for _, c := range []any{n.broker, n.presence, n.mapBroker} {
		if hc, ok := c.(broker.HealthChecker); ok {
			if err := hc.Healthy(); err != nil {
				return fmt.Errorf("gyre: unhealthy: %w", err)
			}
		}
	}
	if n.closing.Load() {
		return errors.New("gyre: node is shutting down")
	}
	return nil
}

// PersonalChannel is the channel a user is subscribed to when
// SubscribeToUserPersonalChannel is on: "#user" in the personal namespace.
func (n *Node) PersonalChannel(user string) string {
	r := n.rules.Load()
	ch := r.cfg.UserBoundary + user
	if ns := n.cfg.PersonalChannelNamespace; ns != "" {
		ch = ns + r.cfg.NamespaceBoundary + ch
	}
	return ch
}

// Refresh updates the credentials of a user's connections (on every
// node): expired closes them with 3005; otherwise expireAt (Unix seconds, 0
// for never) and info (when not nil) replace theirs, and each client gets
// a refresh push.
func (n *Node) Refresh(user string, f ClientFilter, expired bool, expireAt int64, info []byte) error {
	return n.sendControl(&controlpb.Command{Refresh: &controlpb.Refresh{
		User: user, Client: f.ClientID, Session: f.Session, Expired: expired, ExpireAt: expireAt, Info: info,
	}})
}

func (n *Node) refreshLocal(user string, f ClientFilter, expired bool, expireAt int64, info []byte) {
	for _, c := range n.hub.userClients(user) {
		if !f.match(c) {
			continue
		}
		if expired {
			c.Disconnect(DisconnectExpired)
			continue
		}
		c.renew(expireAt, info)
		push := &protocol.Refresh{}
		if expireAt > 0 {
			push.Expires = true
			push.Ttl = uint32(max(expireAt-time.Now().Unix(), 0))
		}
		c.enqueuePush(&protocol.Push{Refresh: push})
	}
}
