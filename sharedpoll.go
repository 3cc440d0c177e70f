package gyre

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gyrehq/gyre/internal/controlpb"
)

// Shared-poll channels: data that changes in the backend without a
// publish (prices, stock levels, vote counts) and that many clients watch.
// A client subscribes to the channel (subscription type shared_poll) and
// then tracks keys with signatures the backend made for it; the cluster
// polls the backend for the tracked keys through the node's
// SharedPollRefreshHandler, a batch of keys per call, and pushes what
// changed to the clients tracking each key. The backend's load follows
// the number of distinct tracked keys, not the number of clients, and not
// the number of nodes: each key is polled by one node of the cluster (see
// sharedpoll_cluster.go).

// SubscriptionTypeSharedPoll: channels whose keys clients track and the
// cluster polls the backend for (see SharedPollOptions).
const SubscriptionTypeSharedPoll SubscriptionType = "shared_poll"

// SharedPollOptions are the options of a shared-poll namespace. Zero
// values mean the defaults said for each field.
type SharedPollOptions struct {
	// RefreshInterval is how often each tracked key is polled; 0 means
	// 10 s.
	RefreshInterval time.Duration
	// RefreshBatchSize is the most keys one handler call asks for; 0
	// means 1000.
	RefreshBatchSize int
	// MaxKeysPerConnection bounds the keys one connection tracks in one
	// channel; 0 means 5000.
	MaxKeysPerConnection int
	// Versioned: the backend versions its values, and a value is pushed
	// when its version grows. Otherwise (versionless) the node compares
	// the data it polls and numbers the changes itself.
	Versioned bool
	// ShutdownDelay keeps a channel's polling (and its last values) that
	// long after its last key is untracked on a node, so that a client
	// that comes straight back finds them; 0 means 1 s, a negative value
	// none.
	ShutdownDelay time.Duration
	// TrackExpiredExtraDelay is how long past its signature's expiry a
	// tracked key is kept, for the client to renew the signature; 0 means
	// 25 s.
	TrackExpiredExtraDelay time.Duration
	// PublishEnabled allows Node.SharedPollPublish on the namespace
	// (versioned namespaces only).
	PublishEnabled bool
	// Route names the backend that polls the namespace's keys; it is
	// passed to the SharedPollRefreshHandler as is.
	Route string
}

func (o SharedPollOptions) interval() time.Duration {
	if o.RefreshInterval <= 0 {
		return 10 * time.Second
	}
	return o.RefreshInterval
}

func (o SharedPollOptions) batchSize() int {
	if o.RefreshBatchSize <= 0 {
		return 1000
	}
	return o.RefreshBatchSize
}

func (o SharedPollOptions) maxKeys() int {
	if o.MaxKeysPerConnection <= 0 {
		return 5000
	}
	return o.MaxKeysPerConnection
}

func (o SharedPollOptions) shutdownDelay() time.Duration {
	switch {
	case o.ShutdownDelay < 0:
		return 0
	case o.ShutdownDelay == 0:
		return time.Second
	}
	return o.ShutdownDelay
}

func (o SharedPollOptions) trackGrace() time.Duration {
	if o.TrackExpiredExtraDelay <= 0 {
		return 25 * time.Second
	}
	return o.TrackExpiredExtraDelay
}

// SharedPollKey is a key to poll and the version of it the node has (0:
// none; always 0 in versionless namespaces).
type SharedPollKey struct {
	Key     string
	Version uint64
}

// SharedPollRefreshEvent asks the backend for the current values of keys
// of a shared-poll channel.
type SharedPollRefreshEvent struct {
	Channel string
	// Route is the namespace's SharedPollOptions.Route.
	Route string
	Items []SharedPollKey
}

// SharedPollItem is a key's value as the backend answered it, or as
// Node.SharedPollPublish sets it.
type SharedPollItem struct {
	Key string
	// Data is the value, as clients get it (JSON for JSON clients).
	Data []byte
	// Version of the value; in versioned namespaces it must grow with
	// each change (an item whose version is not above the known one is
	// not a change). Versionless backends leave it 0.
	Version uint64
	// Removed: the key is gone; its trackers are told and stop tracking
	// it.
	Removed bool
}

// SharedPollRefreshReply is the backend's answer: values of the keys it
// has (a key it leaves out is unchanged, or not there yet), and, in
// versioned namespaces, the epoch of its versions: when that changes,
// versions start over and every tracker of the channel is told to
// subscribe again (unsubscribe 2500).
type SharedPollRefreshReply struct {
	Items []SharedPollItem
	Epoch string
}

// SharedPollRefreshHandler polls the backend. It is called with a
// deadline; an error skips the batch for this cycle (it is retried at the
// next, after a back-off when calls keep failing).
type SharedPollRefreshHandler func(ctx context.Context, e SharedPollRefreshEvent) (SharedPollRefreshReply, error)

// TrackBatch is keys a client asks to track under one signature the
// backend made (see the sharedpoll package).
type TrackBatch struct {
	Signature string
	Keys      []string
}

// TrackEvent is a client's request to track keys of a shared-poll
// channel it is subscribed to.
type TrackEvent struct {
	Channel string
	Batches []TrackBatch
}

// TrackReply allows a TrackEvent: ExpireAt holds, per batch, the Unix
// second its keys stop being tracked unless the client renews them (0:
// never).
type TrackReply struct {
	ExpireAt []int64
}

// TrackHandler decides whether a client may track keys: it checks each
// batch's signature and returns their expiries, or an error for the client
// (ErrorPermissionDenied for a signature that does not verify,
// ErrorTokenExpired for one that expired). Without it, tracking is
// refused.
type TrackHandler func(ctx context.Context, c *Client, e TrackEvent) (TrackReply, error)

// OnSharedPollRefresh sets the handler that polls the backend for the keys
// of shared-poll channels. Shared-poll namespaces need it.
func (n *Node) OnSharedPollRefresh(h SharedPollRefreshHandler) { n.handlers.sharedPollRefresh = h }

// OnTrack sets the handler that allows clients to track keys of
// shared-poll channels.
func (n *Node) OnTrack(h TrackHandler) { n.handlers.track = h }

// Errors of Node.SharedPollPublish.
var (
	// ErrNotSharedPoll: the channel is not in a shared-poll namespace.
	ErrNotSharedPoll = errors.New("gyre: not a shared-poll channel")
	// ErrSharedPollPublishDisabled: the namespace does not allow
	// SharedPollPublish (SharedPollOptions.PublishEnabled).
	ErrSharedPollPublishDisabled = errors.New("gyre: shared-poll publish not enabled")
)

// SharedPollPublish sets a key's value in a versioned shared-poll channel
// whose namespace allows it (SharedPollOptions.PublishEnabled), without
// waiting for the next poll: every node's clients tracking the key get it
// if its version is above theirs. epoch is the backend's epoch of the
// versions, as its poll replies carry it ("" when it has none).
func (n *Node) SharedPollPublish(ctx context.Context, channel string, item SharedPollItem, epoch string) error {
	return n.sharedPollPublish(ctx, channel, item, epoch)
}

// checkSharedPoll refuses to run shared-poll namespaces without the
// handlers they need.
func (n *Node) checkSharedPoll() error {
	r := n.rules.Load()
	uses := r.cfg.WithoutNamespace.SubscriptionType == SubscriptionTypeSharedPoll
	for _, o := range r.namespaces {
		uses = uses || o.SubscriptionType == SubscriptionTypeSharedPoll
	}
	switch {
	case !uses:
		return nil
	case n.handlers.sharedPollRefresh == nil:
		return errors.New("gyre: shared-poll namespaces need a refresh handler: call OnSharedPollRefresh before Run")
	case n.handlers.track == nil:
		return errors.New("gyre: shared-poll namespaces need a track handler: call OnTrack before Run")
	}
	return nil
}

// sharedPollPublish is SharedPollPublish: the value goes to every node as
// if its poller had found it.
func (n *Node) sharedPollPublish(_ context.Context, channel string, item SharedPollItem, epoch string) error {
	opts, err := n.rules.Load().lookup(channel)
	if err != nil {
		return err
	}
	switch {
	case opts.SubscriptionType != SubscriptionTypeSharedPoll:
		return ErrNotSharedPoll
	case !opts.SharedPoll.PublishEnabled || !opts.SharedPoll.Versioned:
		return ErrSharedPollPublishDisabled
	case item.Key == "" || (item.Version == 0 && !item.Removed):
		return ErrorBadRequest
	}
	return n.sendControl(&controlpb.Command{PollUpdate: &controlpb.PollUpdate{
		Channel: channel, Epoch: epoch, Publish: true,
		Items: []*controlpb.PollItem{{Key: item.Key, Data: item.Data, Version: item.Version, Removed: item.Removed}},
	}})
}

// checkSharedPoll refuses, on a shared-poll namespace, the settings that
// would have clients expect what it does not do: its subscribers get
// values of keys, not publications, history or presence.
func (o *ChannelOptions) checkSharedPoll(where string) error {
	sp := o.SharedPoll
	switch {
	case o.MapClientsPresenceChannelPrefix != "" || o.MapUsersPresenceChannelPrefix != "":
		return fmt.Errorf("gyre: %s: map presence channel prefixes belong to stream namespaces", where)
	case o.AllowWildcardSubscriptions:
		return fmt.Errorf("gyre: %s: shared-poll channels have no wildcard subscriptions", where)
	case o.HistorySize > 0 || o.HistoryTTL > 0 || o.ForceRecovery || o.ForcePositioning:
		return fmt.Errorf("gyre: %s: shared-poll channels keep no history", where)
	case sp.PublishEnabled && !sp.Versioned:
		return fmt.Errorf("gyre: %s: shared_poll.publish_enabled needs mode versioned: a published version must compare with the polled ones", where)
	case sp.RefreshInterval < 0 || sp.RefreshBatchSize < 0 || sp.MaxKeysPerConnection < 0 || sp.TrackExpiredExtraDelay < 0:
		return fmt.Errorf("gyre: %s: shared_poll refresh_interval, refresh_batch_size, max_keys_per_connection and track_expired_extra_delay must not be negative", where)
	}
	return o.checkStreamOnly(where)
}
