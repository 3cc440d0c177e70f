package gyre

import (
	"context"
	"time"

	"github.com/gyrehq/gyre/protocol"
)

// Credentials identify the user of a connection.
type Credentials struct {
	UserID string
	// ExpireAt is when the connection must be refreshed (Unix seconds); 0
	// means never.
	ExpireAt int64
	// Info is attached to the connection and shown in presence, join/leave
	// and publications (raw JSON on JSON connections).
	Info []byte
}

// ConnectingEvent describes a connection attempt, before it is accepted.
type ConnectingEvent struct {
	ClientID  string
	Transport string
	// Protocol is the connection's wire format.
	Protocol protocol.Type
	// Token is the connect token, if any; Credentials holds what it
	// carried when the node's token keys verified it.
	Token       string
	Credentials *Credentials
	Data        []byte
	Name        string
	Version     string
	Headers     map[string]string
	// Channels are the channels the client was subscribed to before it
	// reconnected (the keys of the connect command's subs).
	Channels []string
}

// ConnectingReply decides how a connection is accepted.
type ConnectingReply struct {
	// Credentials, when set, replace the token's.
	Credentials *Credentials
	// Data is sent to the client in the connect result.
	Data []byte
	// Channels to subscribe the connection to, server-side, with the
	// channel's options.
	Channels []string
	// Subscriptions are further server-side subscriptions, each with its
	// own options.
	Subscriptions map[string]SubscribeOptions
	// Meta is kept with the connection, never sent to the client, and
	// available to later handlers through Client.Meta. Nil keeps the
	// connect token's meta claim, if any.
	Meta []byte
	// Context, when set, becomes the connection's context (Client.Context)
	// and is what later handlers get: a handler adds values for them to the
	// context it was given. It must derive from that context, which ends
	// when the connection does.
	Context context.Context
}

// SubscribeOptions are the options of one server-side subscription: given
// by a ConnectingReply, by the subs claim of a connection token, or to
// Node.SubscribeWith.
type SubscribeOptions struct {
	// ChanInfo is attached to the subscription (presence, join/leave).
	ChanInfo []byte
	// Data is sent in the subscription's part of the connect result.
	Data []byte
	// Override changes channel options for this subscription.
	Override *SubscribeOverride
}

// SubscribeOverride turns channel options on or off for one subscription;
// a nil field leaves the channel's option as it is.
type SubscribeOverride struct {
	Presence           *bool
	JoinLeave          *bool
	ForcePushJoinLeave *bool
	ForceRecovery      *bool
	ForcePositioning   *bool
}

// ConnectingHandler may accept, refuse (by returning an *Error or a
// *Disconnect) or amend a connection.
type ConnectingHandler func(ctx context.Context, e ConnectingEvent) (ConnectingReply, error)

// ConnectHandler is called once a connection is accepted and its connect
// reply is on its way.
type ConnectHandler func(c *Client)

// SubscribeEvent describes a client's subscribe command.
type SubscribeEvent struct {
	Channel string
	Token   string
	Data    []byte
	// Type is the subscription's type, its namespace's: "" for a stream,
	// or a map type (the first request of a map subscription).
	Type SubscriptionType
}

// SubscribeReply accepts a subscription.
type SubscribeReply struct {
	// ChanInfo is attached to the subscription (presence, join/leave).
	ChanInfo []byte
	// Data is sent in the subscribe result.
	Data []byte
	// ExpireAt is when the subscription must be refreshed; 0 means never.
	ExpireAt int64
	// Filter, when set, is a tags filter the subscriber cannot remove: it
	// is ANDed with any filter the client asked for.
	Filter *protocol.FilterNode
	// EnableRecovery, EnablePositioning, EnablePresence and EnableJoinLeave
	// turn on features the channel's options do not force.
	EnableRecovery    bool
	EnablePositioning bool
	EnablePresence    bool
	EnableJoinLeave   bool
	// Override turns channel options on or off for this subscription,
	// after the Enable fields above.
	Override *SubscribeOverride
	// ServerSideRefresh, with ExpireAt set, keeps the expiry from the
	// client: at ExpireAt the node's sub-refresh handler (OnSubRefresh)
	// decides whether the subscription lives on. Without such a handler
	// the client refreshes the subscription as usual.
	ServerSideRefresh bool
	// Stream, when set, feeds the subscription with publications of its
	// own, for this client only (see SubscriptionStream); recovery,
	// positioning and delta compression are then off.
	Stream SubscriptionStream
}

// SubscribeHandler decides a subscribe command. When set, it replaces the
// namespace's allow_* rules and subscription tokens for clients, unless it
// returns ErrNotHandled for the channel.
type SubscribeHandler func(ctx context.Context, c *Client, e SubscribeEvent) (SubscribeReply, error)

// CacheEmptyHandler is asked to publish the state of channel, whose
// subscriber recovering in cache mode found no publication. populated
// says it did: the history is read again for the subscriber. An error
// refuses the subscription with 100.
type CacheEmptyHandler func(ctx context.Context, channel string) (populated bool, err error)

// PublishEvent describes a client's publish command.
type PublishEvent struct {
	Channel string
	Data    []byte
}

// PublishReply lets a handler change what is published.
type PublishReply struct {
	// Data, when not nil, replaces the client's data.
	Data []byte
	// Tags are attached to the publication (for tags filters).
	Tags map[string]string
	// SkipHistory publishes without saving to the channel's history.
	SkipHistory bool
	// IdempotencyKey makes repeated publishes with the same key publish
	// once (see WithIdempotencyKey).
	IdempotencyKey string
	// Delta makes the publication a delta candidate (see WithDelta).
	Delta bool
	// Version and VersionEpoch drop the publication when it is not newer
	// than the channel's last (see WithVersion).
	Version      uint64
	VersionEpoch string
}

// PublishHandler decides a client's publish. When set, it replaces the
// namespace's allow_publish_* rules, unless it returns ErrNotHandled for
// the channel.
type PublishHandler func(ctx context.Context, c *Client, e PublishEvent) (PublishReply, error)

// ChannelEvent describes a presence, presence_stats or history command.
type ChannelEvent struct {
	Channel string
}

// ChannelPermissionHandler decides a presence, presence_stats or history
// command by returning nil or an error. When set, it replaces the
// namespace's rules for that command.
type ChannelPermissionHandler func(ctx context.Context, c *Client, e ChannelEvent) error

// RPCEvent is a client's RPC call.
type RPCEvent struct {
	Method string
	Data   []byte
}

// RPCReply is the result of an RPC call.
type RPCReply struct {
	Data []byte
}

// RPCHandler answers RPC calls. Without one, or when it returns
// ErrNotHandled, calls get 108.
type RPCHandler func(ctx context.Context, c *Client, e RPCEvent) (RPCReply, error)

// MessageHandler receives a client's asynchronous send command.
type MessageHandler func(c *Client, data []byte)

// RefreshEvent is a connection refreshing its credentials.
type RefreshEvent struct {
	Token string
}

// RefreshReply carries the new expiry.
type RefreshReply struct {
	ExpireAt int64
	Info     []byte
	// Meta, when not nil, replaces the connection's meta.
	Meta []byte
	// Expired, when true, closes the connection with 3005.
	Expired bool
}

// RefreshHandler decides a refresh. When set, it replaces token
// verification of the refresh command.
type RefreshHandler func(ctx context.Context, c *Client, e RefreshEvent) (RefreshReply, error)

// SubRefreshEvent is a subscription whose ExpireAt passed, when its
// subscribe reply asked for ServerSideRefresh.
type SubRefreshEvent struct {
	Channel string
}

// SubRefreshReply decides whether the subscription lives on.
type SubRefreshReply struct {
	// Expired, when true, ends the subscription with unsubscribe 2501.
	Expired bool
	// ExpireAt is the new expiry (Unix seconds); 0 means never.
	ExpireAt int64
	// Info, when not nil, replaces the subscription's channel info.
	Info []byte
}

// SubRefreshHandler prolongs subscriptions on the server side. An error
// other than a *Disconnect keeps the subscription and asks again later.
type SubRefreshHandler func(ctx context.Context, c *Client, e SubRefreshEvent) (SubRefreshReply, error)

// UnsubscribeEvent tells that a client left a channel.
type UnsubscribeEvent struct {
	Channel string
	Code    uint32
	Reason  string
}

// UnsubscribeHandler is called after a subscription ends.
type UnsubscribeHandler func(c *Client, e UnsubscribeEvent)

// DisconnectEvent tells that a connection ended.
type DisconnectEvent struct {
	Disconnect Disconnect
	// Duration the connection lived.
	Duration time.Duration
}

// DisconnectHandler is called after a connection ends.
type DisconnectHandler func(c *Client, e DisconnectEvent)
