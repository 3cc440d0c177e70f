// Package gyre is an embeddable real-time messaging engine: clients keep a
// persistent connection (WebSocket) and receive, in order, what is
// published into the channels they subscribe to, with history, recovery
// after short disconnects, presence and join/leave.
//
// Gyre speaks the Centrifugo client protocol v2, so the existing SDKs
// (centrifuge-js, centrifuge-python, centrifuge-go ...) connect to it
// unchanged.
//
// # Using the engine
//
// A program creates a [Node] from a [Config], registers handlers (see
// [Node.OnConnecting], [Node.OnSubscribe], [Node.OnRPC] ...), calls
// [Node.Run], and mounts the transport handlers ([NewWebsocketHandler])
// into its own [net/http.ServeMux]. It then publishes with [Node.Publish]
// and manages users with [Node.Subscribe], [Node.Unsubscribe] and
// [Node.Disconnect].
//
// Without handlers, the node applies the rules of its configuration:
// connection tokens (JWT) checked with [Config.Token], and the allow_*
// permissions and subscription tokens of each channel namespace
// ([ChannelOptions]). A handler, when set, replaces the rule it covers.
//
// # Brokers
//
// Publications, history and presence go through a [broker.Broker] and a
// [broker.PresenceManager]. The default is the memory engine
// (broker/memory) for a single node; engines for many nodes live in their
// own packages so that the library does not depend on their clients.
//
// # Map channels
//
// A namespace of [ChannelOptions.SubscriptionType] "map" holds keyed
// state instead of a stream: the application writes and removes keys
// ([Node.MapPublish], [Node.MapRemove], clients where
// [MapChannelOptions] allow it), and a subscriber loads the state in
// pages, catches up from the channel's stream of changes and then
// receives each change live, with the key it changed (see client_map.go
// for the phases). The state is kept by a [broker.MapBroker]
// ([Config.MapBroker]; broker/memory and broker/redis have one), apart
// from the stream broker. Namespaces of type "map_clients" and
// "map_users" hold who is subscribed to the channels of a stream
// namespace that names them with its map presence prefixes.
//
// # Order and delivery
//
// For every channel, each subscriber receives publications in the order
// of their offsets. A subscriber that falls behind by more than
// [Config.QueueMaxSize] bytes is disconnected (3008) rather than holding
// unbounded memory; a subscriber of a recoverable channel recovers what
// it missed when it comes back, or learns that it lost state.
//
// # Performance
//
// A publication is encoded once per wire format and the same bytes are
// queued for every subscriber; one published into many channels is
// encoded once for all of them. Each connection writes everything queued
// in one frame and one write: after a fan-out, from a few goroutines that
// write to many connections each without waiting, otherwise from a writer
// goroutine that exists only while there is something to write. Pings
// come from one timer wheel per node, not from a timer per connection.
package gyre
