package gyre

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/filter"
	"github.com/gyrehq/gyre/token"
)

// Config configures a Node. The zero value works: a node with a memory
// broker that refuses every client until handlers or token keys let them in.
type Config struct {
	// Name of the node in info; "" means the host name.
	Name string
	// Version reported to clients in the connect result; "" means "0.0.0".
	Version string
	// Logger receives the engine's logs; nil discards them.
	Logger *slog.Logger
	// Observer receives measurements for metrics; nil measures nothing.
	Observer Observer
	// DeliveryTracer, when set, is told about the fan-out of every
	// publication that carries a Trace (PublishOptions.Trace), once per
	// node and path: the channel's subscribers, and each pattern's. Nil
	// traces nothing, and publications without a Trace cost it nothing.
	DeliveryTracer DeliveryTracer

	// Broker and PresenceManager carry publications between nodes and keep
	// history and presence; nil means the memory engine.
	Broker          broker.Broker
	PresenceManager broker.PresenceManager
	// MapBroker keeps the state of map channels (see SubscriptionType)
	// and carries their changes between nodes; nil means map channels are
	// not available: their subscribes and the Map* methods answer 108.
	MapBroker broker.MapBroker

	// Occupancy, when set, keeps which channels (those whose options set
	// StateEvents) have a subscriber and, with UserStatusEvents, which
	// users have a connection, anywhere in the cluster: the node tells it
	// of its own first and last ones, and it decides the cluster's
	// transitions, which reach the handler set with OnOccupancy. Nil: no
	// channel state or user status events. Where events go to several
	// destinations that fail apart, broker.RoutedOccupancy gives each its
	// own tracker, so that one that fails holds back only its own.
	Occupancy        broker.OccupancyTracker
	OccupancyOptions broker.OccupancyOptions
	// SharedPollConcurrency bounds the shared-poll backend calls in
	// flight from this node; 0 means 64.
	SharedPollConcurrency int
	UserStatusEvents      bool

	// Channels: namespaces, boundaries and per-namespace options.
	Channels ChannelConfig

	// Token holds the keys that verify connection tokens. Empty keys mean
	// tokens are refused (unless handlers authenticate clients).
	Token token.Config
	// SubscriptionToken, when Enabled, verifies subscription tokens with
	// its own keys; otherwise Token's keys verify them too.
	SubscriptionToken SubscriptionTokenConfig

	// Insecure lets every client connect anonymously and do everything.
	// For development only.
	Insecure bool
	// AllowAnonymousConnectWithoutToken accepts connections without a token
	// as anonymous users.
	AllowAnonymousConnectWithoutToken bool
	// DisallowAnonymousConnectionTokens refuses tokens with an empty sub.
	DisallowAnonymousConnectionTokens bool

	// PingInterval between server pings; 0 means 25s, negative turns pings
	// (and the pong check) off.
	PingInterval time.Duration
	// PongTimeout is how long a client has to answer a ping; 0 means 8s,
	// negative turns the check off.
	// It must be shorter than PingInterval.
	PongTimeout time.Duration
	// ExpiredCloseDelay is the grace period after a connection's credentials
	// expire before it is closed with 3005; 0 means 25s.
	ExpiredCloseDelay time.Duration
	// ExpiredSubCloseDelay is the grace period after a subscription token
	// expires before the subscription ends with unsubscribe 2501 (the
	// client resubscribes with a fresh token); 0 means 25s.
	ExpiredSubCloseDelay time.Duration
	// ServerSideRefreshRetry is how long an expired connection or
	// subscription waits before its server-side refresh handler
	// (OnServerSideRefresh, OnSubRefresh) is asked again after it failed;
	// 0 means 10s.
	ServerSideRefreshRetry time.Duration
	// StaleCloseDelay is how long a connection may stay without sending
	// connect before it is closed with 3502; 0 means 10s.
	StaleCloseDelay time.Duration

	// ChannelLimit caps channels per connection; 0 means 128, negative
	// means no limit.
	ChannelLimit int
	// QueueMaxSize caps the bytes waiting to be written to one connection;
	// over it the connection is closed with 3008. 0 means 1 MiB.
	QueueMaxSize int
	// ConnectionLimit caps connections on this node; 0 means no limit.
	ConnectionLimit int
	// UserConnectionLimit caps connections of one user on this node; 0
	// means no limit.
	UserConnectionLimit int
	// RateLimit limits the commands of each connection and user; the zero
	// value limits nothing.
	RateLimit RateLimitConfig
	// MaxJSONDepth bounds how deep JSON objects and arrays nest in a
	// client's commands, data included; deeper commands are malformed
	// (the connection is closed with 3501). 0 means
	// protocol.DefaultMaxJSONDepth (256).
	MaxJSONDepth int
	// TagsFilterLimits bound the tags filters clients send with subscribe
	// (tf); zero fields mean the filter package's defaults. Filters from
	// tokens and handlers are trusted and not bounded.
	TagsFilterLimits filter.Limits
	// HistoryMaxPublicationLimit caps the limit a client may ask of
	// history; 0 means 300.
	HistoryMaxPublicationLimit int
	// RecoveryMaxPublicationLimit caps the publications sent on recovery;
	// over it recovery fails (recovered=false). 0 means 300.
	RecoveryMaxPublicationLimit int
	// PositionCheckInterval is how often positioned subscriptions are
	// checked for lost publications; 0 means 40s.
	PositionCheckInterval time.Duration
	// PresenceUpdateInterval is how often presence entries of connected
	// clients are refreshed; 0 means 27s.
	PresenceUpdateInterval time.Duration
	// IdempotentResultTTL keeps publish idempotency keys; 0 means 5m.
	IdempotentResultTTL time.Duration
	// PublishHoldTimeout is how long a publish waits while a node of the
	// cluster is behind in handling what its broker delivers (see
	// broker.BacklogHandler), before it is refused with ErrorTooManyRequests
	// (111, temporary); 0 means 2s. Negative never holds: publishes go on,
	// and a node far enough behind loses publications (its recoverable
	// subscribers are told, see backpressure.go).
	PublishHoldTimeout time.Duration
	// ConnectIncludeServerTime puts the server time, in Unix milliseconds,
	// into the connect result's time field.
	ConnectIncludeServerTime bool
	// SubscribeToUserPersonalChannel subscribes every authenticated
	// connection to its user's personal channel (see PersonalChannel).
	SubscribeToUserPersonalChannel bool
	// SingleConnection, with SubscribeToUserPersonalChannel, keeps one
	// connection per user: when a user connects while presence in the
	// personal channel shows another connection, the others are closed
	// with 3504 (connection limit), across nodes. It needs presence in the
	// personal channel's namespace.
	SingleConnection bool
	// PersonalChannelNamespace is the namespace of personal channels; ""
	// means channels without namespace.
	PersonalChannelNamespace string
}

// SubscriptionTokenConfig configures subscription token verification.
type SubscriptionTokenConfig struct {
	Enabled bool
	token.Config
}

func (c Config) withDefaults() (Config, error) {
	if c.Version == "" {
		c.Version = "0.0.0"
	}
	if c.PingInterval == 0 {
		c.PingInterval = 25 * time.Second
	}
	if c.PongTimeout == 0 {
		c.PongTimeout = 8 * time.Second
	}
	if c.PingInterval > 0 && c.PingInterval < 2*time.Second {
		return c, fmt.Errorf("gyre: PingInterval %v: must be at least 2s", c.PingInterval)
	}
	if c.PingInterval > 0 && c.PongTimeout >= c.PingInterval {
		return c, fmt.Errorf("gyre: PongTimeout %v: must be shorter than PingInterval %v", c.PongTimeout, c.PingInterval)
	}
	if c.ExpiredCloseDelay == 0 {
		c.ExpiredCloseDelay = 25 * time.Second
	}
	if c.ServerSideRefreshRetry == 0 {
		c.ServerSideRefreshRetry = 10 * time.Second
	}
	if c.ExpiredSubCloseDelay == 0 {
		c.ExpiredSubCloseDelay = 25 * time.Second
	}
	if c.StaleCloseDelay == 0 {
		c.StaleCloseDelay = 10 * time.Second
	}
	if c.ChannelLimit == 0 {
		c.ChannelLimit = 128
	}
	if c.QueueMaxSize == 0 {
		c.QueueMaxSize = 1 << 20
	}
	if c.HistoryMaxPublicationLimit == 0 {
		c.HistoryMaxPublicationLimit = 300
	}
	if c.RecoveryMaxPublicationLimit == 0 {
		c.RecoveryMaxPublicationLimit = 300
	}
	if c.PositionCheckInterval == 0 {
		c.PositionCheckInterval = 40 * time.Second
	}
	if c.PresenceUpdateInterval == 0 {
		c.PresenceUpdateInterval = 27 * time.Second
	}
	if c.IdempotentResultTTL == 0 {
		c.IdempotentResultTTL = 5 * time.Minute
	}
	if c.PublishHoldTimeout == 0 {
		c.PublishHoldTimeout = 2 * time.Second
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}
