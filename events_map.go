package gyre

import "context"

// MapPublishEvent describes a client's write into a map channel (a
// publish command of type map).
type MapPublishEvent struct {
	Channel string
	// Key is the key the client sent; a namespace's ClientKey has already
	// replaced it.
	Key  string
	Data []byte
}

// MapPublishReply lets a handler change the write or do it itself.
type MapPublishReply struct {
	// Key, when not empty, replaces the event's key.
	Key string
	// Options of the write: Options.Data, when not nil, replaces the
	// client's data; a nil Options.ClientInfo is the client's.
	Options MapPublishOptions
	// Result, when set, tells that the handler wrote the key itself (a
	// proxy did): the engine writes nothing and answers the client.
	Result *MapUpdateResult
}

// MapPublishHandler decides a client's write into a map channel. When
// set, it replaces the namespace's map.allow_publish_* rules, unless it
// returns ErrNotHandled for the channel.
type MapPublishHandler func(ctx context.Context, c *Client, e MapPublishEvent) (MapPublishReply, error)

// MapRemoveEvent describes a client's removal of a key from a map
// channel (a publish command of type map with removed set).
type MapRemoveEvent struct {
	Channel string
	// Key as in MapPublishEvent.
	Key string
}

// MapRemoveReply lets a handler change the removal or do it itself.
type MapRemoveReply struct {
	// Key, when not empty, replaces the event's key.
	Key string
	// Options of the removal; a nil Options.ClientInfo is the client's.
	Options MapRemoveOptions
	// Result, when set, tells that the handler removed the key itself.
	Result *MapUpdateResult
}

// MapRemoveHandler decides a client's removal from a map channel. When
// set, it replaces the namespace's map.allow_remove_* rules, unless it
// returns ErrNotHandled for the channel.
type MapRemoveHandler func(ctx context.Context, c *Client, e MapRemoveEvent) (MapRemoveReply, error)
