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
	// Token is the connect token, if any; Credentials holds what it
	// carried when the node's token keys verified it.
	Token       string
	Credentials *Credentials
	Data        []byte
	Name        string
	Version     string
	Headers     map[string]string
}

// ConnectingReply decides how a connection is accepted.
type ConnectingReply struct {
	// Credentials, when set, replace the token's.
	Credentials *Credentials
	// Data is sent to the client in the connect result.
	Data []byte
	// Channels to subscribe the connection to, server-side.
	Channels []string
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
	// Stream, when set, feeds the subscription with publications of its
	// own, for this client only (see SubscriptionStream); recovery,
	// positioning and delta compression are then off.
	Stream SubscriptionStream
}

// SubscribeHandler decides a subscribe command. When set, it replaces the
// namespace's allow_* rules and subscription tokens for clients.
type SubscribeHandler func(ctx context.Context, c *Client, e SubscribeEvent) (SubscribeReply, error)

// PublishEvent describes a client's publish command.
type PublishEvent struct {
	Channel string
	Data    []byte
}

// PublishReply lets a handler change what is published.
type PublishReply struct {
	// Data, when not nil, replaces the client's data.
	Data []byte
}

// PublishHandler decides a client's publish. When set, it replaces the
// namespace's allow_publish_* rules.
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

// RPCHandler answers RPC calls. Without one, calls get 104.
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
	// Expired, when true, closes the connection with 3005.
	Expired bool
}

// RefreshHandler decides a refresh. When set, it replaces token
// verification of the refresh command.
type RefreshHandler func(ctx context.Context, c *Client, e RefreshEvent) (RefreshReply, error)

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
