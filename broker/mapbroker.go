package broker

import (
	"context"
	"errors"
	"time"
)

// Map channels hold keyed state that the server owns and keeps in sync
// with its subscribers: a subscriber reads the state (in pages), catches
// up from the channel's stream of changes, then receives each change live.
// A MapBroker keeps that state and stream and carries the changes between
// nodes. It is a separate contract from Broker: a deployment may keep
// stream channels on NATS and map state in Redis.
//
// Every change of a map channel (a key written or removed, a key expired)
// gets the channel's next offset, lands in the stream when the mode keeps
// one, and is handed to every node subscribed to the channel as a
// Publication with Key set (and Removed for a removal), in offset order.
// State entries carry the offset of the change that wrote them.
//
// A channel's epoch and top offset (its meta) exist from the first call
// that touches the channel, a read included: ReadState or ReadStream of
// an unknown channel answer offset 0 and a new epoch, and the first
// change then takes offset 1 in that epoch, so that a subscriber that
// read the empty state can follow on. Every mode has them; the ephemeral
// mode keeps no stream but still counts offsets.
//
// A removal, whether by Remove or by expiry, carries the removed entry's
// Tags (so that a subscriber's tag filter lets it through as it let the
// key through), no Data, and the remover's ClientInfo (none for expiry).
//
// A MapBroker copies what it is given: a caller may reuse its buffers
// once a call returns. What ReadState and ReadStream return belongs to
// the caller. What it hands to the RunHandler is the broker's and must
// not be changed.

var (
	// ErrBadCursor is returned by ReadState for a cursor the broker did not
	// hand out (malformed, or of another channel). The engine answers it as
	// a bad request.
	ErrBadCursor = errors.New("broker: bad map state cursor")
)

// MapMode says what a map channel keeps.
type MapMode int

const (
	// MapModeEphemeral keeps state whose keys expire (KeyTTL), and no
	// stream: a subscriber that was away resyncs the whole state.
	MapModeEphemeral MapMode = iota + 1
	// MapModeRecoverable keeps expiring state and a stream of its changes
	// (expiries included), so a subscriber catches up after a short absence.
	MapModeRecoverable
	// MapModePersistent keeps state whose keys live until removed, and a
	// stream.
	MapModePersistent
)

// HasStream reports whether the mode keeps a stream of changes.
func (m MapMode) HasStream() bool { return m == MapModeRecoverable || m == MapModePersistent }

// HasExpiry reports whether the mode's keys expire.
func (m MapMode) HasExpiry() bool { return m == MapModeEphemeral || m == MapModeRecoverable }

// String is the mode's config name.
func (m MapMode) String() string {
	switch m {
	case MapModeEphemeral:
		return "ephemeral"
	case MapModeRecoverable:
		return "recoverable"
	case MapModePersistent:
		return "persistent"
	}
	return "unknown"
}

// MapOptions are a map channel's storage settings. The engine resolves them
// from the channel's namespace and passes them with every call, so that a
// broker keeps no configuration of its own per channel.
type MapOptions struct {
	Mode MapMode
	// KeyTTL is how long a key lives after its last write (modes with
	// expiry). An expired key is removed as if by Remove: a change with
	// Removed set goes to subscribers and, with a stream, into it.
	KeyTTL time.Duration
	// StreamSize and StreamTTL bound the stream (modes with a stream).
	StreamSize int
	StreamTTL  time.Duration
	// MetaTTL is how long the channel's epoch and top offset outlive its
	// last change or read (ReadState, ReadStream, and a TTL refreshed by
	// RefreshTTLOnSuppress); zero keeps them forever. When they are gone
	// the channel starts over with a new epoch, its state and stream
	// dropped with them.
	MetaTTL time.Duration
}

// KeyMode makes a write conditional on the key's presence.
type KeyMode string

const (
	// KeyModeReplace writes whether or not the key exists.
	KeyModeReplace KeyMode = ""
	// KeyModeIfNew writes only a key that does not exist.
	KeyModeIfNew KeyMode = "if_new"
	// KeyModeIfExists writes only a key that exists.
	KeyModeIfExists KeyMode = "if_exists"
)

// SuppressReason says why a map write changed nothing.
type SuppressReason string

const (
	SuppressNone        SuppressReason = ""
	SuppressIdempotency SuppressReason = "idempotency"
	SuppressVersion     SuppressReason = "version"
	SuppressKeyExists   SuppressReason = "key_exists"
	SuppressKeyNotFound SuppressReason = "key_not_found"
)

// MapPublishOptions are the arguments of MapBroker.Publish.
type MapPublishOptions struct {
	Map MapOptions
	// Data is the key's new value.
	Data       []byte
	Tags       map[string]string
	ClientInfo *ClientInfo
	// IdempotencyKey, when set, makes a repeated write with the same key
	// within IdempotentResultTTL change nothing (SuppressIdempotency) and
	// return the first write's position. Keys are per channel, shared
	// with Remove; only a write that changed something is remembered.
	// A zero IdempotentResultTTL is the broker's default.
	IdempotencyKey      string
	IdempotentResultTTL time.Duration
	// UseDelta asks for the change to go to delta subscribers as a delta
	// against the key's previous value: the handed-over RunPublication
	// carries the previous value in Prev.
	UseDelta bool
	// Version, when positive, writes only if greater than the key's stored
	// version (when VersionEpoch equals the stored one's, or either is
	// empty); else SuppressVersion. A versioned write stores its Version
	// and VersionEpoch with the key; a write without Version keeps what
	// is stored, and a removal or expiry of the key forgets it. The
	// entry, and its change, carry the Version the write gave (0 for
	// none).
	Version      uint64
	VersionEpoch string
	// Score is kept with the entry and returned with it.
	Score   int64
	KeyMode KeyMode
	// RefreshTTLOnSuppress extends an existing key's life (by KeyTTL from
	// now) when the write is suppressed by KeyModeIfNew, without a change:
	// presence keep-alive.
	RefreshTTLOnSuppress bool
}

// MapRemoveOptions are the arguments of MapBroker.Remove.
type MapRemoveOptions struct {
	Map                 MapOptions
	IdempotencyKey      string
	IdempotentResultTTL time.Duration
	// ClientInfo of who removed the key, if a client did.
	ClientInfo *ClientInfo
}

// MapUpdateResult is what a write or removal did.
type MapUpdateResult struct {
	// Position is the change's place in the stream, or, when suppressed,
	// the stream's top (the first write's, for idempotency).
	Position       StreamPosition
	Suppressed     bool
	SuppressReason SuppressReason
}

// MapStateOptions are the arguments of MapBroker.ReadState.
type MapStateOptions struct {
	Map MapOptions
	// Revision, when set, must name the channel's current epoch, else
	// ErrUnrecoverablePosition: the state a subscriber is paging through
	// has been reset.
	Revision *StreamPosition
	// Cursor continues from where the page that returned it ended; empty
	// starts from the beginning. A cursor the broker did not hand out for
	// this channel: ErrBadCursor. A cursor stays valid while the state
	// changes: the iteration then returns every key present throughout
	// it, and may or may not return keys written or removed meanwhile
	// (the caller follows those through the stream).
	Cursor string
	// Limit: 0 returns no entries (only the position), -1 all, a positive
	// number at most that many (a broker may return a few more).
	Limit int
	// Key, when set, returns only that key's entry (if any), ignoring
	// Cursor and Limit.
	Key string
}

// MapStateResult is a page of a map channel's state.
type MapStateResult struct {
	// Entries are publications with Key, Offset (of the change that wrote
	// the entry), Data, Tags, Info, Time and Score set.
	Entries []*Publication
	// Position is the stream top when the page was read.
	Position StreamPosition
	// Cursor continues after this page; empty when it was the last.
	Cursor string
}

// MapStreamOptions are the arguments of MapBroker.ReadStream. Filter is
// read as by Broker.History: Since (exclusive; Reverse pages backwards
// before it) must name the channel's epoch and an offset not past its
// top, else ErrUnrecoverablePosition, in every mode; changes the stream
// no longer keeps (StreamSize, StreamTTL) are simply missing, and the
// caller checks continuity.
type MapStreamOptions struct {
	Map    MapOptions
	Filter HistoryFilter
}

// MapStreamResult is a page of a map channel's stream.
type MapStreamResult struct {
	Pubs     []*Publication
	Position StreamPosition
}

// MapStats counts a map channel's state.
type MapStats struct {
	NumKeys int
}

// MapBroker keeps map channels' state and streams and delivers their
// changes to the nodes subscribed to them.
type MapBroker interface {
	// Run starts the broker; it hands every change of a subscribed
	// channel to h, per channel in offset order (as Broker's runs).
	Run(h RunHandler) error
	// Subscribe and Unsubscribe start and stop delivery of a channel's
	// changes to this node. Subscribe returns once delivery is confirmed.
	Subscribe(channel string) error
	Unsubscribe(channel string) error
	// Publish writes key. Nothing changes (and nothing is delivered) when
	// the result is suppressed.
	Publish(ctx context.Context, channel, key string, opts MapPublishOptions) (MapUpdateResult, error)
	// Remove deletes key; a missing key is SuppressKeyNotFound.
	Remove(ctx context.Context, channel, key string, opts MapRemoveOptions) (MapUpdateResult, error)
	// ReadState returns a page of the state, ordered by key or by an
	// order of the broker's own that its cursors follow (a hash scan). An
	// iteration over a state that does not change returns every key
	// exactly once.
	ReadState(ctx context.Context, channel string, opts MapStateOptions) (MapStateResult, error)
	// ReadStream returns changes from the stream; for a mode without a
	// stream it returns only the position.
	ReadStream(ctx context.Context, channel string, opts MapStreamOptions) (MapStreamResult, error)
	// Stats counts the state's keys.
	Stats(ctx context.Context, channel string) (MapStats, error)
	// Clear drops the channel's state, stream and meta: the next change
	// starts a new epoch. The broker delivers nothing for it; the engine
	// tells the channel's subscribers to sync again.
	Clear(ctx context.Context, channel string) error
	// Close releases the broker's resources.
	Close() error
}
