package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// The methods of map channels (namespaces of subscription_type map,
// map_clients or map_users): keyed state that the API writes and reads
// and subscribers keep in sync with. Each calls the node's Map* method of
// the same name.

// MapPublishRequest writes Key of a map channel. The value is Data (or
// B64Data, base64); StreamData and B64StreamData, a separate value for the
// stream in Centrifugo, are accepted empty only.
type MapPublishRequest struct {
	Channel        string            `json:"channel"`
	Key            string            `json:"key"`
	Data           Payload           `json:"data"`
	B64Data        string            `json:"b64data"`
	StreamData     Payload           `json:"stream_data"`
	B64StreamData  string            `json:"b64stream_data"`
	Tags           map[string]string `json:"tags"`
	IdempotencyKey string            `json:"idempotency_key"`
	Delta          bool              `json:"delta"`
	Version        uint64            `json:"version"`
	VersionEpoch   string            `json:"version_epoch"`
	Score          int64             `json:"score"`
	// KeyMode is "" (write anyway), "if_new" or "if_exists".
	KeyMode string `json:"key_mode"`
}

// MapRemoveRequest removes Key from a map channel.
type MapRemoveRequest struct {
	Channel        string `json:"channel"`
	Key            string `json:"key"`
	IdempotencyKey string `json:"idempotency_key"`
}

// MapUpdateResult is what a write or removal did: the change's place in
// the channel's stream, or, when Suppressed (SuppressReason says why:
// idempotency, version, key_exists, key_not_found), the stream's top.
type MapUpdateResult struct {
	Offset         uint64 `json:"offset,omitempty"`
	Epoch          string `json:"epoch,omitempty"`
	Suppressed     bool   `json:"suppressed,omitempty"`
	SuppressReason string `json:"suppress_reason,omitempty"`
}

// MapReadStateRequest reads a page of a map channel's state: from Cursor
// ("" starts at the beginning), at most about Limit entries (0: none, only
// the position; -1: all), or only Key. A revision (RevisionOffset,
// RevisionEpoch) whose epoch is not the channel's gives 112.
type MapReadStateRequest struct {
	Channel        string `json:"channel"`
	Cursor         string `json:"cursor"`
	Limit          int    `json:"limit"`
	Key            string `json:"key"`
	Asc            bool   `json:"asc"`
	RevisionOffset uint64 `json:"revision_offset"`
	RevisionEpoch  string `json:"revision_epoch"`
}

// MapEntry is a key of a map channel's state, or a change in its stream
// (Removed for a removal). Time is in Unix milliseconds.
type MapEntry struct {
	Key     string            `json:"key"`
	Data    Payload           `json:"data,omitempty"`
	Tags    map[string]string `json:"tags,omitempty"`
	Offset  uint64            `json:"offset,omitempty"`
	Score   int64             `json:"score,omitempty"`
	Removed bool              `json:"removed,omitempty"`
	Time    int64             `json:"time,omitempty"`
}

// MapReadStateResult is a page of the state, the stream position it was
// read at, and the cursor of the next page ("" after the last).
type MapReadStateResult struct {
	Entries []MapEntry `json:"entries"`
	Offset  uint64     `json:"offset,omitempty"`
	Epoch   string     `json:"epoch,omitempty"`
	Cursor  string     `json:"cursor,omitempty"`
}

// MapReadStreamRequest reads changes of a map channel's stream after the
// position SinceOffset/SinceEpoch (before it with Reverse); none given
// reads from the start. Limit as in history.
type MapReadStreamRequest struct {
	Channel     string `json:"channel"`
	SinceOffset uint64 `json:"since_offset"`
	SinceEpoch  string `json:"since_epoch"`
	Limit       int    `json:"limit"`
	Reverse     bool   `json:"reverse"`
}

// MapReadStreamResult is the changes asked for and the stream's top.
type MapReadStreamResult struct {
	Entries []MapEntry `json:"entries"`
	Offset  uint64     `json:"offset,omitempty"`
	Epoch   string     `json:"epoch,omitempty"`
}

// MapStatsResult counts a map channel's keys.
type MapStatsResult struct {
	NumKeys int `json:"num_keys"`
}

// mapKey checks the key of a write or removal.
func mapKey(key string) error {
	switch {
	case key == "":
		return &Error{107, "bad request: key required"}
	case len(key) > gyre.MapMaxKeyLength:
		return &Error{107, fmt.Sprintf("bad request: key longer than %d bytes", gyre.MapMaxKeyLength)}
	}
	return nil
}

// mapFailed maps the node's error of a map method: a channel that is not
// a map channel is named as such.
func mapFailed(err error) error {
	if errors.Is(err, gyre.ErrMapNotMapChannel) {
		return &Error{107, "bad request: not a map channel"}
	}
	return err
}

// mapPublishOptions checks a write and makes the node's options of it.
func mapPublishOptions(r *MapPublishRequest) (gyre.MapPublishOptions, error) {
	if err := requireChannel(r.Channel); err != nil {
		return gyre.MapPublishOptions{}, err
	}
	if err := mapKey(r.Key); err != nil {
		return gyre.MapPublishOptions{}, err
	}
	if (len(r.StreamData) > 0 && string(r.StreamData) != "null") || r.B64StreamData != "" {
		return gyre.MapPublishOptions{}, &Error{107, "bad request: stream_data is not supported: the stream carries data"}
	}
	var mode gyre.KeyMode
	switch gyre.KeyMode(r.KeyMode) {
	case gyre.KeyModeReplace, gyre.KeyModeIfNew, gyre.KeyModeIfExists:
		mode = gyre.KeyMode(r.KeyMode)
	default:
		return gyre.MapPublishOptions{}, &Error{107, fmt.Sprintf("bad request: key_mode %q: want \"\", \"if_new\" or \"if_exists\"", clip(r.KeyMode))}
	}
	data, err := optionalPayload(r.Data, r.B64Data, "b64data")
	if err != nil {
		return gyre.MapPublishOptions{}, err
	}
	return gyre.MapPublishOptions{
		Data: data, Tags: r.Tags, IdempotencyKey: r.IdempotencyKey, UseDelta: r.Delta,
		Version: r.Version, VersionEpoch: r.VersionEpoch, Score: r.Score, KeyMode: mode,
	}, nil
}

func toMapUpdateResult(r gyre.MapUpdateResult) MapUpdateResult {
	return MapUpdateResult{
		Offset: r.Position.Offset, Epoch: r.Position.Epoch,
		Suppressed: r.Suppressed, SuppressReason: string(r.SuppressReason),
	}
}

// MapPublish writes a key of a map channel.
func (e *Executor) MapPublish(ctx context.Context, r *MapPublishRequest) (MapUpdateResult, error) {
	opts, err := mapPublishOptions(r)
	if err != nil {
		return MapUpdateResult{}, err
	}
	res, err := e.node.MapPublish(ctx, r.Channel, r.Key, opts)
	if err != nil {
		return MapUpdateResult{}, e.failed("map_publish", r.Channel, mapFailed(err))
	}
	return toMapUpdateResult(res), nil
}

// MapRemove removes a key from a map channel; a missing key is a
// suppressed result (key_not_found).
func (e *Executor) MapRemove(ctx context.Context, r *MapRemoveRequest) (MapUpdateResult, error) {
	if err := requireChannel(r.Channel); err != nil {
		return MapUpdateResult{}, err
	}
	if err := mapKey(r.Key); err != nil {
		return MapUpdateResult{}, err
	}
	res, err := e.node.MapRemove(ctx, r.Channel, r.Key, gyre.MapRemoveOptions{IdempotencyKey: r.IdempotencyKey})
	if err != nil {
		return MapUpdateResult{}, e.failed("map_remove", r.Channel, mapFailed(err))
	}
	return toMapUpdateResult(res), nil
}

// mapEntries converts state entries or stream changes.
func mapEntries(pubs []*gyre.Publication) []MapEntry {
	out := make([]MapEntry, len(pubs))
	for i, p := range pubs {
		out[i] = MapEntry{Key: p.Key, Data: p.Data, Tags: p.Tags, Offset: p.Offset, Score: p.Score, Removed: p.Removed, Time: p.Time}
	}
	return out
}

// MapReadState reads a page of a map channel's state.
func (e *Executor) MapReadState(ctx context.Context, r *MapReadStateRequest) (MapReadStateResult, error) {
	if err := requireChannel(r.Channel); err != nil {
		return MapReadStateResult{}, err
	}
	if len(r.Key) > gyre.MapMaxKeyLength {
		return MapReadStateResult{}, mapKey(r.Key)
	}
	opts := gyre.MapReadStateOptions{Cursor: r.Cursor, Limit: r.Limit, Key: r.Key, Asc: r.Asc}
	if r.RevisionOffset > 0 || r.RevisionEpoch != "" {
		opts.Revision = &gyre.StreamPosition{Offset: r.RevisionOffset, Epoch: r.RevisionEpoch}
	}
	res, err := e.node.MapReadState(ctx, r.Channel, opts)
	if err != nil {
		return MapReadStateResult{}, e.failed("map_read_state", r.Channel, mapFailed(err))
	}
	return MapReadStateResult{
		Entries: mapEntries(res.Entries), Offset: res.Position.Offset, Epoch: res.Position.Epoch, Cursor: res.Cursor,
	}, nil
}

// MapReadStream reads changes of a map channel's stream.
func (e *Executor) MapReadStream(ctx context.Context, r *MapReadStreamRequest) (MapReadStreamResult, error) {
	if err := requireChannel(r.Channel); err != nil {
		return MapReadStreamResult{}, err
	}
	opts := gyre.MapReadStreamOptions{Limit: r.Limit, Reverse: r.Reverse}
	if r.SinceOffset > 0 || r.SinceEpoch != "" {
		opts.Since = &gyre.StreamPosition{Offset: r.SinceOffset, Epoch: r.SinceEpoch}
	}
	res, err := e.node.MapReadStream(ctx, r.Channel, opts)
	if err != nil {
		return MapReadStreamResult{}, e.failed("map_read_stream", r.Channel, mapFailed(err))
	}
	return MapReadStreamResult{Entries: mapEntries(res.Pubs), Offset: res.Position.Offset, Epoch: res.Position.Epoch}, nil
}

// MapStats counts the keys of a map channel.
func (e *Executor) MapStats(ctx context.Context, r *ChannelRequest) (MapStatsResult, error) {
	if err := requireChannel(r.Channel); err != nil {
		return MapStatsResult{}, err
	}
	st, err := e.node.MapStats(ctx, r.Channel)
	if err != nil {
		return MapStatsResult{}, e.failed("map_stats", r.Channel, mapFailed(err))
	}
	return MapStatsResult{NumKeys: st.NumKeys}, nil
}

// MapClear drops a map channel's state and stream; its subscribers on
// every node load it again.
func (e *Executor) MapClear(ctx context.Context, r *ChannelRequest) (EmptyResult, error) {
	if err := requireChannel(r.Channel); err != nil {
		return EmptyResult{}, err
	}
	if err := e.node.MapClear(ctx, r.Channel); err != nil {
		return EmptyResult{}, e.failed("map_clear", r.Channel, mapFailed(err))
	}
	return EmptyResult{}, nil
}

// The gRPC binding of the map methods.

func grpcMapPublishRequest(r *apipb.MapPublishRequest) (*MapPublishRequest, *Error) {
	if err := notJSON("data", r.GetData(), "b64data"); err != nil {
		return nil, err
	}
	return &MapPublishRequest{
		Channel: r.GetChannel(), Key: r.GetKey(), Data: r.GetData(), B64Data: r.GetB64Data(),
		StreamData: r.GetStreamData(), B64StreamData: r.GetB64StreamData(), Tags: r.GetTags(),
		IdempotencyKey: r.GetIdempotencyKey(), Delta: r.GetDelta(), Version: r.GetVersion(),
		VersionEpoch: r.GetVersionEpoch(), Score: r.GetScore(), KeyMode: r.GetKeyMode(),
	}, nil
}

func grpcMapPublishResult(r MapUpdateResult) *apipb.MapPublishResult {
	return &apipb.MapPublishResult{Offset: r.Offset, Epoch: r.Epoch, Suppressed: r.Suppressed, SuppressReason: r.SuppressReason}
}

func grpcMapRemoveRequest(r *apipb.MapRemoveRequest) (*MapRemoveRequest, *Error) {
	return &MapRemoveRequest{Channel: r.GetChannel(), Key: r.GetKey(), IdempotencyKey: r.GetIdempotencyKey()}, nil
}

func grpcMapRemoveResult(r MapUpdateResult) *apipb.MapRemoveResult {
	return &apipb.MapRemoveResult{Offset: r.Offset, Epoch: r.Epoch, Suppressed: r.Suppressed, SuppressReason: r.SuppressReason}
}

func grpcMapReadStateRequest(r *apipb.MapReadStateRequest) (*MapReadStateRequest, *Error) {
	return &MapReadStateRequest{
		Channel: r.GetChannel(), Cursor: r.GetCursor(), Limit: int(r.GetLimit()), Key: r.GetKey(), Asc: r.GetAsc(),
		RevisionOffset: r.GetRevisionOffset(), RevisionEpoch: r.GetRevisionEpoch(),
	}, nil
}

func grpcMapEntries(entries []MapEntry) []*apipb.MapEntry {
	out := make([]*apipb.MapEntry, len(entries))
	for i, m := range entries {
		out[i] = &apipb.MapEntry{Key: m.Key, Data: m.Data, Tags: m.Tags, Offset: m.Offset, Score: m.Score, Removed: m.Removed, Time: m.Time}
	}
	return out
}

func grpcMapReadStateResult(r MapReadStateResult) *apipb.MapReadStateResult {
	return &apipb.MapReadStateResult{Entries: grpcMapEntries(r.Entries), Offset: r.Offset, Epoch: r.Epoch, Cursor: r.Cursor}
}

func grpcMapReadStreamRequest(r *apipb.MapReadStreamRequest) (*MapReadStreamRequest, *Error) {
	return &MapReadStreamRequest{
		Channel: r.GetChannel(), SinceOffset: r.GetSinceOffset(), SinceEpoch: r.GetSinceEpoch(),
		Limit: int(r.GetLimit()), Reverse: r.GetReverse(),
	}, nil
}

func grpcMapReadStreamResult(r MapReadStreamResult) *apipb.MapReadStreamResult {
	return &apipb.MapReadStreamResult{Entries: grpcMapEntries(r.Entries), Offset: r.Offset, Epoch: r.Epoch}
}

func grpcMapStatsResult(r MapStatsResult) *apipb.MapStatsResult {
	return &apipb.MapStatsResult{NumKeys: int32(min(r.NumKeys, 1<<31-1))}
}
