// Package broker defines the contracts between the Gyre engine and the
// engines that carry publications between nodes and keep history and
// presence: memory (one node) in broker/memory, Redis and NATS in their own
// packages.
//
// A broker never reaches into the engine's hub: it hands what it receives to
// the EventHandler given to Run, and the engine fans it out to its
// connections. The engine never knows which broker runs.
//
// # Ordering
//
// For each channel a Broker must hand publications to
// EventHandler.HandleRuns in the order of the offsets it assigned, never
// concurrently for the same channel, including for publishes issued back to
// back from one goroutine or in one PublishMany.
//
// # Runs
//
// A broker hands over publications in runs (consecutive publications of one
// channel, never none) and groups in one HandleRuns call what it has at hand
// together: the messages of one pub/sub read (Redis), a stretch of
// PublishMany items of one channel (memory). The engine wakes each
// connection once per call (for its own batches, once per batch of up to
// 256 publications), so that what a connection gets leaves in one write; a
// subscriber is given its share of a run in one step.
package broker

import (
	"errors"
	"time"
)

// Errors a broker returns that the engine branches on.
var (
	// ErrUnrecoverablePosition is returned by History when the requested
	// position never was in the stream as it is now: the epoch differs, or
	// the offset is past the top. Publications evicted by size or TTL are
	// simply missing from the result; callers that need continuity check
	// that the first offset returned follows Since.Offset.
	ErrUnrecoverablePosition = errors.New("broker: unrecoverable position")
	// ErrNotAvailable is returned by a broker that is temporarily unable to
	// serve (Redis down). The engine reports it as a temporary error.
	ErrNotAvailable = errors.New("broker: not available")
	// ErrNotSupported is returned for what the broker cannot do at all,
	// such as keeping history without a store (the NATS broker). The
	// engine reports it as not available (108), not as a temporary error
	// worth retrying.
	ErrNotSupported = errors.New("broker: not supported")
)

// ClientInfo describes a connection inside a channel: who published a
// publication, who joined or left, who is present.
type ClientInfo struct {
	ClientID string
	UserID   string
	ConnInfo []byte // raw JSON (or any bytes) set at connect
	ChanInfo []byte // raw JSON (or any bytes) set at subscribe
}

// Publication is one message in a channel's stream.
type Publication struct {
	// Offset is the position in the channel's stream, 0 for channels without
	// history.
	Offset uint64
	Data   []byte
	Info   *ClientInfo
	Tags   map[string]string
	// Time is the publish time in Unix milliseconds.
	Time int64
	// Channel is set for publications delivered through wildcard
	// subscriptions; empty otherwise.
	Channel string
	// Key is set for the changes and state entries of map channels (see
	// MapBroker); Removed marks a change that removed Key. Score and
	// Version are the entry's, as written with MapPublishOptions.
	Key     string
	Removed bool
	Score   int64
	Version uint64
	// Trace is PublishOptions.Trace of the publish, on the publications
	// handed to HandleRuns; nil on those read from a stream (History, a
	// Store), which never keep it.
	Trace []byte
}

// StreamPosition is a place in a channel's stream.
type StreamPosition struct {
	Offset uint64
	Epoch  string
}

// PublishOptions control how one publication is stored.
type PublishOptions struct {
	// HistorySize and HistoryTTL enable history when both are positive: the
	// stream keeps at most HistorySize publications for HistoryTTL each.
	HistorySize int
	HistoryTTL  time.Duration
	// HistoryMetaTTL is how long the stream's meta (offset, epoch) outlives
	// its last publication. Zero means the broker's default.
	HistoryMetaTTL time.Duration
	// ClientInfo of the publisher, if any.
	ClientInfo *ClientInfo
	Tags       map[string]string
	// IdempotencyKey, when set, makes a repeated publish with the same key
	// within IdempotentResultTTL return the first result without
	// publishing again.
	IdempotencyKey      string
	IdempotentResultTTL time.Duration
	// UseDelta asks subscribers that negotiated delta compression to receive
	// this publication as a delta against the previous one.
	UseDelta bool
	// NoDelta says that the channel takes no delta compression: no
	// subscriber of it can receive a delta (its namespace allows none),
	// and the publisher never sets UseDelta for it. A broker that keeps a
	// delta base per channel may then leave the base as it is for a
	// publication without UseDelta instead of clearing it; the Redis
	// broker, for one, sends such a publication without history or
	// idempotency key as a plain PUBLISH. False promises nothing.
	NoDelta bool
	// Version, when positive and history is on, drops the publication
	// (Suppressed, at the stream's top) unless it is greater than the
	// version of the last versioned publication kept in the stream's
	// meta, when VersionEpoch is empty or equals that publication's. The
	// version and its epoch are stored with the meta and go with it.
	Version      uint64
	VersionEpoch string
	// PatternScope, when set, names the pattern scope of the channel (its
	// namespace, when the namespace allows wildcard subscriptions): besides
	// the channel's own subscribers, the publication goes to every node
	// that subscribed the scope with PatternBroker.SubscribePatternScope,
	// in runs with Run.Scope set. Empty: the channel
	// has no pattern subscribers anywhere and the broker does nothing more.
	PatternScope string
	// Trace is opaque to the broker (the engine puts a trace context
	// there): it goes with the publication to every node, on both paths,
	// as Publication.Trace, and is never stored. A broker that cannot
	// carry it (NATS raw mode, whose messages are the bare data) drops it.
	Trace []byte
}

// HistoryFilter selects publications from a stream.
type HistoryFilter struct {
	// Since, when set, returns publications after this position
	// (exclusive), or before it when Reverse is set (backward paging). The
	// epoch must match the stream's, else ErrUnrecoverablePosition.
	Since *StreamPosition
	// Limit: 0 returns no publications (only the stream top); -1 returns all;
	// a positive number returns at most that many.
	Limit int
	// Reverse returns the newest first.
	Reverse bool
}

// HistoryOptions are the arguments of Broker.History.
type HistoryOptions struct {
	Filter HistoryFilter
	// MetaTTL as in PublishOptions.HistoryMetaTTL.
	MetaTTL time.Duration
	// Peek asks a Store for the stream top only, without creating a
	// missing meta or extending its life: a channel without a stream is
	// the zero position. The NATS broker reads it when a channel is
	// subscribed, whether it keeps history or not. Brokers may ignore it.
	Peek bool
}

// RunPublication is one publication of a Run: the publication, its place
// in the stream, and, when delta was requested, the publication before it
// when the broker knows it (for fossil delta compression), else nil.
type RunPublication struct {
	Pub      *Publication
	Position StreamPosition
	Delta    bool
	Prev     *Publication
}

// Run is consecutive publications of one channel, in offset order.
type Run struct {
	Channel string
	// Scope is empty for a run meant for the channel's own subscribers.
	// Set, the run is for this node's pattern subscriptions: publications
	// published with PublishOptions.PatternScope Scope (see PatternBroker).
	Scope string
	// Pattern, set only by a PatternFilterBroker, names the one pattern
	// of Scope (its part after the scope) whose subscribers the run is
	// for; empty, the run goes to every pattern of Scope that matches the
	// channel.
	Pattern string
	Pubs    []RunPublication
}

// RunHandler receives publications.
type RunHandler interface {
	// HandleRuns is called with every publication of a channel this node
	// subscribed to (and of a pattern scope it subscribed to), per channel
	// in offset order and never concurrently for one channel on one path:
	// the channel's own runs, and its pattern runs (Scope set), are each
	// in order, but may be handled concurrently with each other, as may
	// runs of different channels. A run holds at least one publication.
	// The runs, their publications and the slices holding them belong to
	// the broker once HandleRuns returns.
	HandleRuns(runs []Run) error
}

// EventHandler receives what a broker delivers to this node. The engine
// implements it.
type EventHandler interface {
	RunHandler
	// HandleJoin and HandleLeave deliver join/leave events of a channel.
	HandleJoin(channel string, info *ClientInfo) error
	HandleLeave(channel string, info *ClientInfo) error
	// HandleControl delivers a node-to-node control message.
	HandleControl(data []byte) error
}

// Broker carries publications, join/leave events and control messages
// between nodes and keeps channel history.
type Broker interface {
	// Run starts the broker; it calls h for every event from now on.
	Run(h EventHandler) error
	// Subscribe makes this node receive the channel's events. It is called
	// when the first connection of this node subscribes to the channel.
	Subscribe(channel string) error
	// Unsubscribe stops delivery of the channel's events to this node.
	Unsubscribe(channel string) error
	// Publish stores (when history is on) and delivers a publication. It
	// returns the stream position given to it; suppressed is true when an
	// idempotency key matched an earlier publish, or the version was stale
	// (PublishOptions.Version), and nothing was sent. It is PublishMany
	// with one item.
	Publish(channel string, data []byte, opts PublishOptions) (sp StreamPosition, suppressed bool, err error)
	// PublishMany publishes items in order, as many Publish calls would,
	// and sets each item's Position and Suppressed, or Err. A broker with a
	// server in between sends them together (pipelined), without waiting
	// for one before the next: per channel the items keep their order, and
	// history and idempotency work as in Publish. Items of different
	// channels may land in any order relative to each other.
	PublishMany(items []PublishItem)
	// PublishJoin and PublishLeave deliver join/leave events.
	PublishJoin(channel string, info *ClientInfo) error
	PublishLeave(channel string, info *ClientInfo) error
	// PublishControl delivers data to every node (nodeID empty) or to one.
	// A broker may deliver a message meant for one node to every node: the
	// engine ignores messages addressed to other nodes.
	PublishControl(data []byte, nodeID string) error
	// History returns publications of a channel and its current top.
	History(channel string, opts HistoryOptions) ([]*Publication, StreamPosition, error)
	// RemoveHistory drops a channel's stored publications (the meta, so the
	// offset and epoch, stays).
	RemoveHistory(channel string) error
	// Close releases the broker's resources.
	Close() error
}

// DirectPublisher is implemented by brokers that hand publications to the
// handler before publishing returns (one node, nothing in between).
// PublishManyTo is PublishMany with h receiving the publications instead
// of the handler given to Run (nothing is handed over when h is nil), with
// the same ordering guarantees. Each stretch of consecutive items of one
// channel is published under one hold of the channel's order and handed
// to h in one HandleRuns call, with its pattern runs, before anything
// published after it. The engine uses it to tell its own publications
// apart: those of one batch wake each connection once, so that the whole
// batch leaves in one write.
type DirectPublisher interface {
	PublishManyTo(h RunHandler, items []PublishItem)
}

// PublishItem is one publication of PublishMany: what to publish, and,
// once PublishMany returns, where it landed or why it did not.
type PublishItem struct {
	Channel string
	Data    []byte
	Opts    PublishOptions

	Position StreamPosition
	// Suppressed: an idempotency key matched an earlier publish and
	// nothing was sent, Position being the earlier publish's; or the
	// version was stale, Position being the stream's top.
	Suppressed bool
	Err        error
}

// PatternBroker is implemented by brokers that deliver publications to
// pattern (wildcard) subscriptions. Publications published with
// PublishOptions.PatternScope reach every node that subscribed that scope,
// in runs whose Scope is set, once per publication and, per channel, in
// offset order: a separate path from the channel's own subscribers, so
// that a node holding both an exact and a pattern subscriber of a channel
// gets each publication once on each path.
//
// A broker may deliver a scope's publications to a node that did not
// subscribe it (the memory broker, with one node, always delivers); the
// engine ignores scopes it holds no patterns in.
type PatternBroker interface {
	// SubscribePatternScope makes this node receive the publications of
	// scope. It is called when the node's first pattern subscription in
	// the scope arrives, and returns once delivery is confirmed.
	SubscribePatternScope(scope string) error
	// UnsubscribePatternScope stops that delivery; called when the node's
	// last pattern subscription in the scope leaves.
	UnsubscribePatternScope(scope string) error
}

// PatternFilterBroker is a PatternBroker that subscribes each pattern
// on its own, so that a node receives only what its patterns match (NATS
// subject wildcards) rather than every publication of a scope. The engine
// calls SubscribePattern when the node's first subscriber of a pattern
// arrives (after SubscribePatternScope for the scope's first), and
// UnsubscribePattern when its last leaves; name is the pattern's part
// after the scope. Such a broker hands over each pattern's publications
// in runs with Run.Pattern set, once per pattern: two patterns of a node
// that match one channel each get the publication.
type PatternFilterBroker interface {
	PatternBroker
	SubscribePattern(scope, name string) error
	UnsubscribePattern(scope, name string) error
}

// PresenceStats counts a channel's present connections and distinct users.
type PresenceStats struct {
	NumClients int
	NumUsers   int
}

// PresenceManager keeps who is in a channel. Entries expire unless refreshed
// by calling AddPresence again within the manager's TTL.
type PresenceManager interface {
	Presence(channel string) (map[string]*ClientInfo, error)
	PresenceStats(channel string) (PresenceStats, error)
	AddPresence(channel, clientID string, info *ClientInfo) error
	RemovePresence(channel, clientID, userID string) error
	Close() error
}

// HealthChecker is implemented by brokers and presence managers that can
// lose their backend (a Redis connection): Healthy returns an error while
// they cannot serve. The node's health reflects it.
type HealthChecker interface {
	Healthy() error
}

// SubscriptionLostHandler may be implemented by an EventHandler. A broker
// that can lose its subscriptions (a Redis connection dropped) calls it
// once it has subscribed the channels again, in order with their
// publications: whatever was published in between may have been missed.
// It may name channels that missed nothing, never miss one that did.
type SubscriptionLostHandler interface {
	HandleSubscriptionLost(channels []string) error
}

// BacklogHandler may be implemented by an EventHandler (or a map
// broker's RunHandler). A broker that queues what it received for the
// handler (a Redis pub/sub connection, a NATS subscription) calls it with
// behind true when a queue has not emptied for a moment or is nearly
// full, and with false once every queue drained. Past the queue Redis and
// NATS hold what the node does not read, up to a limit past which they
// drop it: the engine holds publishes back meanwhile, so that the node
// catches up first. queued is how many messages waited at the time (0
// when caught up). It is called on the broker's delivery goroutines and
// must not block.
type BacklogHandler interface {
	HandleBacklog(behind bool, queued int)
}

// PatternScopeLostHandler may be implemented by an EventHandler. A
// PatternBroker that can lose its scope subscriptions (a Redis connection
// dropped, or dropped by Redis for reading too slowly) calls it once it
// has subscribed the scopes again, on the path that delivers their
// publications and in order with them: the scopes' publications handed
// over before the call were published before the interruption, those
// after it are live, and any published in between may never be handed
// over. A broker that received a publication of a scope and cannot hand
// it over (it does not decode) reports the scope at that place too. It
// may name scopes that missed nothing, never miss one that did.
//
// Pattern subscriptions have no stream to recover from, so the engine
// tells every pattern subscriber of the scopes to subscribe again.
type PatternScopeLostHandler interface {
	HandlePatternScopeLost(scopes []string) error
}

// Store keeps channel streams (offsets, epochs, history, idempotency
// results and versions) for a broker whose pub/sub keeps none: the NATS
// broker pairs with one on Redis or on JetStream. The broker asks the
// store for a position first, then sends the publication with it.
type Store interface {
	// Append does for each item what PublishMany does, without delivering
	// anything: it assigns the channel's next position (history on),
	// stores the publication, remembers the idempotency result and the
	// version, and sets Position and Suppressed, or Err. Per channel the
	// items keep their order, and positions are handed out in that order.
	// When an item asks for delta (Opts.UseDelta) the store sets Prev to
	// the channel's previous publication when it knows it.
	Append(items []StoreItem)
	// History and RemoveHistory are Broker's.
	History(channel string, opts HistoryOptions) ([]*Publication, StreamPosition, error)
	RemoveHistory(channel string) error
	// Close releases the store's resources.
	Close() error
}

// StoreItem is one publication of Store.Append: the item as PublishMany
// takes it, the publish time (Unix ms) to store, and, once Append
// returns, the publication before it when delta was asked for.
type StoreItem struct {
	PublishItem
	Time int64
	Prev *Publication
}
