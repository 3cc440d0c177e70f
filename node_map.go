package gyre

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/internal/controlpb"
)

// Types of map channels shared with map brokers, named here for library
// users.
type (
	// MapUpdateResult is what a write or removal did.
	MapUpdateResult = broker.MapUpdateResult
	// MapStateResult is a page of a map channel's state.
	MapStateResult = broker.MapStateResult
	// MapStreamResult is a page of a map channel's stream of changes.
	MapStreamResult = broker.MapStreamResult
	// MapStats counts a map channel's keys.
	MapStats = broker.MapStats
	// KeyMode makes a write conditional on the key's presence.
	KeyMode = broker.KeyMode
	// SuppressReason says why a map write changed nothing.
	SuppressReason = broker.SuppressReason
)

// Key modes of MapPublishOptions.KeyMode.
const (
	KeyModeReplace  = broker.KeyModeReplace
	KeyModeIfNew    = broker.KeyModeIfNew
	KeyModeIfExists = broker.KeyModeIfExists
)

// Errors of the map API. The errors returned wrap them together with the
// client protocol's Error the server answers with: errors.Is finds both.
var (
	// ErrMapNotMapChannel: the channel's namespace is not of a map
	// subscription type (107 bad request).
	ErrMapNotMapChannel = errors.New("gyre: not a map channel")
	// ErrMapBadKey: a key is empty or longer than MapMaxKeyLength bytes
	// (107 bad request).
	ErrMapBadKey = errors.New("gyre: map key empty or too long")
	// ErrMapNotConfigured: the node has no MapBroker (108 not available).
	ErrMapNotConfigured = errors.New("gyre: no map broker configured")
)

// MapPublishOptions are the arguments of Node.MapPublish besides the
// channel and key. The channel's storage settings come from its
// namespace.
type MapPublishOptions struct {
	// Data is the key's new value.
	Data []byte
	// Tags go with the entry, for subscribers' tags filters.
	Tags       map[string]string
	ClientInfo *ClientInfo
	// IdempotencyKey makes a repeated write with the same key within
	// IdempotentResultTTL (0: the node's IdempotentResultTTL) change
	// nothing and return the first write's result.
	IdempotencyKey      string
	IdempotentResultTTL time.Duration
	// UseDelta sends the change to subscribers with delta compression as
	// a delta against the key's previous value (the namespace's
	// DeltaPublish does it for every write).
	UseDelta bool
	// Version, when positive, writes only when greater than the key's
	// stored version of the same VersionEpoch (either empty matches).
	Version      uint64
	VersionEpoch string
	// Score is kept and returned with the entry.
	Score int64
	// KeyMode writes only a new key (KeyModeIfNew) or only an existing
	// one (KeyModeIfExists).
	KeyMode KeyMode
	// RefreshTTLOnSuppress extends an existing key's life when KeyMode
	// suppresses the write.
	RefreshTTLOnSuppress bool
}

// MapRemoveOptions are the arguments of Node.MapRemove besides the
// channel and key.
type MapRemoveOptions struct {
	IdempotencyKey      string
	IdempotentResultTTL time.Duration
	// ClientInfo of who removed the key, if a client did.
	ClientInfo *ClientInfo
}

// MapReadStateOptions select a page of a map channel's state.
type MapReadStateOptions struct {
	// Cursor continues after the page that returned it; "" starts at the
	// beginning. A cursor not handed out for this channel is a bad
	// request.
	Cursor string
	// Limit: 0 returns only the position, -1 every entry, a positive
	// number at most about that many.
	Limit int
	// Key, when set, returns only that key's entry.
	Key string
	// Asc is accepted for the API's sake: pages come in the broker's
	// order (by key), which has no direction to choose.
	Asc bool
	// Revision, when set, must name the channel's epoch, else the error
	// is ErrorUnrecoverablePosition: the state changed its epoch while it
	// was paged through.
	Revision *StreamPosition
}

// MapReadStreamOptions select changes from a map channel's stream.
type MapReadStreamOptions struct {
	// Since returns the changes after it (before it with Reverse); its
	// epoch must be the channel's, else ErrorUnrecoverablePosition.
	Since *StreamPosition
	// Limit: 0 returns only the position, -1 all, else at most that many.
	Limit   int
	Reverse bool
}

// mapChannel returns the options of channel, which must be a map channel
// the node can serve.
func (n *Node) mapChannel(channel string) (*ChannelOptions, error) {
	opts, err := n.rules.Load().lookup(channel)
	if err != nil {
		return nil, err
	}
	if !opts.SubscriptionType.IsMap() {
		return nil, &causedError{e: ErrorBadRequest, cause: ErrMapNotMapChannel}
	}
	if n.mapBroker == nil {
		return nil, &causedError{e: ErrorNotAvailable, cause: ErrMapNotConfigured}
	}
	return opts, nil
}

// checkMapKey refuses an empty or oversized key.
func checkMapKey(key string) error {
	if key == "" || len(key) > MapMaxKeyLength {
		return &causedError{e: ErrorBadRequest, cause: ErrMapBadKey}
	}
	return nil
}

// mapError is the error of a failed map broker call of op on channel: the
// broker's error kept for the caller's log, and the client protocol's
// Error it means.
func mapError(op, channel string, err error) error {
	switch {
	case errors.Is(err, broker.ErrNotAvailable):
		err = &causedError{e: ErrorInternal, cause: err}
	case errors.Is(err, broker.ErrNotSupported):
		err = &causedError{e: ErrorNotAvailable, cause: err}
	case errors.Is(err, broker.ErrUnrecoverablePosition):
		err = &causedError{e: ErrorUnrecoverablePosition, cause: err}
	case errors.Is(err, broker.ErrBadCursor):
		err = &causedError{e: ErrorBadRequest, cause: err}
	}
	return fmt.Errorf("gyre: map %s of %q: %w", op, channel, err)
}

// MapPublish writes key of a map channel and delivers the change to the
// channel's subscribers on every node. A channel outside map namespaces
// gives ErrMapNotMapChannel; an empty key, or one longer than
// MapMaxKeyLength bytes, ErrMapBadKey.
func (n *Node) MapPublish(ctx context.Context, channel, key string, opts MapPublishOptions) (MapUpdateResult, error) {
	chOpts, err := n.mapChannel(channel)
	if err != nil {
		return MapUpdateResult{}, err
	}
	if err := checkMapKey(key); err != nil {
		return MapUpdateResult{}, err
	}
	return n.mapPublish(ctx, chOpts, channel, key, opts)
}

// mapPublish writes key of channel, a map channel with options chOpts.
func (n *Node) mapPublish(ctx context.Context, chOpts *ChannelOptions, channel, key string, o MapPublishOptions) (MapUpdateResult, error) {
	bo := broker.MapPublishOptions{
		Map:                  chOpts.Map.brokerOptions(),
		Data:                 o.Data,
		Tags:                 o.Tags,
		ClientInfo:           o.ClientInfo,
		IdempotencyKey:       o.IdempotencyKey,
		IdempotentResultTTL:  o.IdempotentResultTTL,
		UseDelta:             o.UseDelta || chOpts.DeltaPublish,
		Version:              o.Version,
		VersionEpoch:         o.VersionEpoch,
		Score:                o.Score,
		KeyMode:              o.KeyMode,
		RefreshTTLOnSuppress: o.RefreshTTLOnSuppress,
	}
	if bo.IdempotentResultTTL == 0 {
		bo.IdempotentResultTTL = n.cfg.IdempotentResultTTL
	}
	res, err := n.mapBroker.Publish(ctx, channel, key, bo)
	return n.mapChanged("publish", channel, res, err)
}

// mapChanged counts a map write or removal (op) of channel that the
// broker answered with res or err, logging a failure.
func (n *Node) mapChanged(op, channel string, res MapUpdateResult, err error) (MapUpdateResult, error) {
	if err != nil {
		lvl := slog.LevelError
		if errors.Is(err, broker.ErrNotAvailable) {
			lvl = slog.LevelWarn
		}
		n.logBrokerFailure("publish", lvl, "map "+op+" failed", "channel", channel, "error", err)
		return res, mapError(op, channel, err)
	}
	if !res.Suppressed {
		n.obs.BrokerSent("publication", 1)
		n.published.Add(1)
	}
	return res, nil
}

// MapRemove removes key from a map channel; subscribers receive the
// removal. A missing key is a suppressed result, not an error.
func (n *Node) MapRemove(ctx context.Context, channel, key string, opts MapRemoveOptions) (MapUpdateResult, error) {
	chOpts, err := n.mapChannel(channel)
	if err != nil {
		return MapUpdateResult{}, err
	}
	if err := checkMapKey(key); err != nil {
		return MapUpdateResult{}, err
	}
	return n.mapRemove(ctx, chOpts, channel, key, opts)
}

// mapRemove removes key of channel, a map channel with options chOpts.
func (n *Node) mapRemove(ctx context.Context, chOpts *ChannelOptions, channel, key string, o MapRemoveOptions) (MapUpdateResult, error) {
	bo := broker.MapRemoveOptions{
		Map:                 chOpts.Map.brokerOptions(),
		IdempotencyKey:      o.IdempotencyKey,
		IdempotentResultTTL: o.IdempotentResultTTL,
		ClientInfo:          o.ClientInfo,
	}
	if bo.IdempotentResultTTL == 0 {
		bo.IdempotentResultTTL = n.cfg.IdempotentResultTTL
	}
	res, err := n.mapBroker.Remove(ctx, channel, key, bo)
	return n.mapChanged("remove", channel, res, err)
}

// MapReadState returns a page of a map channel's state with the stream
// position it was read at.
func (n *Node) MapReadState(ctx context.Context, channel string, opts MapReadStateOptions) (MapStateResult, error) {
	chOpts, err := n.mapChannel(channel)
	if err != nil {
		return MapStateResult{}, err
	}
	if len(opts.Key) > MapMaxKeyLength {
		return MapStateResult{}, &causedError{e: ErrorBadRequest, cause: ErrMapBadKey}
	}
	res, err := n.mapBroker.ReadState(ctx, channel, broker.MapStateOptions{
		Map: chOpts.Map.brokerOptions(), Revision: opts.Revision, Cursor: opts.Cursor, Limit: opts.Limit, Key: opts.Key,
	})
	if err != nil {
		return res, mapError("read state", channel, err)
	}
	return res, nil
}

// MapReadStream returns changes from a map channel's stream; a channel
// in ephemeral mode has none and returns only its position.
func (n *Node) MapReadStream(ctx context.Context, channel string, opts MapReadStreamOptions) (MapStreamResult, error) {
	chOpts, err := n.mapChannel(channel)
	if err != nil {
		return MapStreamResult{}, err
	}
	res, err := n.mapBroker.ReadStream(ctx, channel, broker.MapStreamOptions{
		Map: chOpts.Map.brokerOptions(), Filter: broker.HistoryFilter{Since: opts.Since, Limit: opts.Limit, Reverse: opts.Reverse},
	})
	if err != nil {
		return res, mapError("read stream", channel, err)
	}
	return res, nil
}

// MapStats counts a map channel's keys.
func (n *Node) MapStats(ctx context.Context, channel string) (MapStats, error) {
	if _, err := n.mapChannel(channel); err != nil {
		return MapStats{}, err
	}
	st, err := n.mapBroker.Stats(ctx, channel)
	if err != nil {
		return st, mapError("stats", channel, err)
	}
	return st, nil
}

// MapClear drops a map channel's state, stream and position, and makes
// its subscribers on every node load it again (unsubscribe 2500, after
// which the SDK subscribes from scratch).
func (n *Node) MapClear(ctx context.Context, channel string) error {
	if _, err := n.mapChannel(channel); err != nil {
		return err
	}
	if err := n.mapBroker.Clear(ctx, channel); err != nil {
		return mapError("clear", channel, err)
	}
	if err := n.sendControl(&controlpb.Command{MapClear: &controlpb.MapClear{Channel: channel}}); err != nil {
		n.log.Error("map clear: telling the nodes failed; subscribers keep the old state until they resubscribe", "channel", channel, "error", err)
		return err
	}
	return nil
}

// mapClearedLocal makes the local subscribers of a cleared map channel
// load its state again.
func (n *Node) mapClearedLocal(channel string) {
	told := 0
	for s := range n.hub.subscribers(channel).all() {
		if s.isMap && loseState(s) {
			told++
		}
	}
	if told > 0 {
		n.log.Log(context.Background(), slog.LevelDebug, "map channel cleared; subscribers resync", "channel", channel, "subscribers", told)
	}
}
