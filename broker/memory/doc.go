// Package memory implements the broker contracts for a single Gyre node,
// keeping streams, idempotency results and presence in process memory.
//
// Everything is lost when the process exits: a restarted node starts every
// stream with a new epoch, so clients that try to recover from the old one
// learn that their position is gone.
//
// # Streams
//
// A channel published with history on (PublishOptions.HistorySize and
// HistoryTTL both positive) is a stream: every such publication gets the
// next offset (1, 2, 3, ...) and the stream carries an epoch, a short random
// string made when the stream is created. The stream keeps at most
// HistorySize publications, each for HistoryTTL. Its meta (offset and
// epoch) lives HistoryMetaTTL after the last publish with history or
// History call; once that passes the stream is lost, and the next publish
// or History call starts a new one with a new epoch and offsets from 1.
//
// A publish with history off is still delivered, with offset 0, and returns
// a zero StreamPosition; it neither stores the publication nor moves the
// stream's offset.
//
// # History rules
//
// History first drops expired state, then creates the stream (a fresh
// epoch, offset 0) if the channel has none, so that a subscriber can learn
// an epoch before anything is published. The returned StreamPosition is
// always the stream's top: its epoch and the offset of its last publication.
//
// With Filter.Since set:
//
//   - Since.Epoch differs from the stream's, or Since.Offset is greater than
//     the top offset: no publications, the top, and
//     broker.ErrUnrecoverablePosition.
//   - Otherwise, forward: the stored publications with offsets greater than
//     Since.Offset, oldest first. Reverse: those with offsets less than
//     Since.Offset, newest first (so that paging backwards passes the
//     oldest offset seen as the next Since).
//   - Publications evicted by HistorySize, expired by HistoryTTL or dropped
//     by RemoveHistory are simply missing: no error. A caller that needs
//     continuity checks it: the first publication returned has offset
//     Since.Offset+1, or none is returned and Since.Offset equals the top.
//
// Without Since, forward starts at the oldest stored publication and
// reverse at the newest. Filter.Limit 0 returns no publications (the top
// only, still checking Since), a negative limit returns all, a positive
// one at most that many.
//
// Returned publications are copies: a caller may change them freely.
//
// # Delivery
//
// Publish and PublishMany hand each stretch of consecutive publications of
// one channel to the EventHandler's HandleRuns before they return, holding
// the channel's lock, so publications of one channel reach the handler one
// run at a time in offset order whatever the number of publishing
// goroutines. Channels live in a sharded map, and each has its own lock, so
// publishes to different channels do not wait for each other. The
// publications handed to the handler are the broker's stored values and
// must be treated as read-only; the handler must not publish to the same
// channel before returning. PublishManyTo does the same with another
// handler (the engine's, for its own batches). Join, leave and control
// messages go to the handler directly. Subscribe and Unsubscribe do
// nothing: one node receives everything.
//
// # Pattern delivery
//
// Publications published with PublishOptions.PatternScope also go, in the
// same HandleRuns call and under the same channel lock, in runs with
// Run.Scope set, one per stretch of publications with the same scope,
// after the channel's own run. So per channel the pattern path keeps the
// same order as the exact one, whatever the number of publishers. It gets
// the same read-only publications. SubscribePatternScope and
// UnsubscribePatternScope do nothing: with one node every scope is
// delivered, subscribed or not, and the engine ignores scopes it holds no
// patterns in. A suppressed publish (a repeated idempotency key) is
// delivered on neither path.
//
// Locks are taken in one order: a shard's, then a channel's, then (map
// channels) the shard's expiry queue's. Publish and History release the
// shard lock before taking the channel's; only the sweep holds both, and
// it only tries the channel lock, skipping a busy channel rather than
// waiting for its handler.
//
// # Expiry
//
// Publishes and History calls drop the expired state of the channel they
// touch. A background sweep, started by NewBroker and stopped by Close,
// frees channels nobody touches: each tick examines at most
// Config.SweepBatch channels, resuming where the previous tick stopped.
// PresenceManager sweeps its entries the same way.
//
// # Map channels
//
// MapBroker keeps map channels (broker.MapBroker): per channel a lock, an
// epoch and top offset, the keys (a map, and a B-tree of the same entries
// by key for paging), the stream of changes in a ring like a Broker's
// history (at most StreamSize changes, each for StreamTTL; a StreamSize
// of zero keeps none, a StreamTTL of zero keeps them until evicted), and
// the idempotency results.
//
// A change (a write, a removal, an expiry) is handed to the RunHandler
// under the channel's lock before the call that made it returns, as
// Broker's publications are, so each channel's changes arrive one run at
// a time in offset order; the handler must not call the broker for the
// same channel before returning, and must treat what it is given as
// read-only. Only the changes of channels this node subscribed to are
// handed over.
//
// State pages come in key order, at most Limit entries each. A cursor is
// the page's last key after a hash of the channel, base64url: a cursor of
// another channel, of another broker (an earlier process) or made up is
// broker.ErrBadCursor. The next page starts at the first key after the
// cursor's, so a key written or removed meanwhile is returned or not by
// its place, and a key present throughout is returned exactly once.
//
// Keys of the modes with expiry sit in an expiry queue per shard of
// channels, a heap that holds each expiring key once; a refreshed TTL
// moves the key in it. One background sweep, every
// MapConfig.SweepInterval, removes the expired keys, each as a change of
// its channel (all of one channel's that expired together in one run),
// then frees idle channels as Broker's sweep does. A key stays in the
// state until that sweep removes it, so state, stream and deliveries
// agree.
//
// The meta of a channel with a MetaTTL expires that long after the last
// call about it; the channel then starts over, its state, stream and
// idempotency results dropped. A channel whose meta never expires is
// freed once it has held nothing (no keys, stream or idempotency
// results), unsubscribed, for MapConfig.IdleTTL: its epoch goes with it,
// which costs a subscriber that comes back to it a resync of an empty
// state, where keeping every channel ever used would cost memory without
// bound. Clear drops the same as an expired meta, and keeps the node's
// subscription.
package memory
