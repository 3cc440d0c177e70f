// Package jetstream implements broker.Store on NATS JetStream: the
// channel streams (offsets, epochs, history, idempotency results and
// versions) that a broker whose pub/sub keeps no history pairs with. It
// needs nats-server 2.9 or newer with JetStream on, and uses nothing
// newer than 2.9 has (no per-message TTL, no batched direct get, no
// subject delete markers). The engine never imports it.
//
// # Streams and subjects
//
// A channel's publications are messages on one subject,
// Prefix.t<ttl-ms>.<channel token>, in the stream of its HistoryTTL,
// PREFIX_T<ttl-ms>: one stream per distinct HistoryTTL, with MaxAge =
// HistoryTTL, no limit of messages per subject (the store trims each
// channel to its HistorySize, see Positions), file storage, DiscardOld
// and direct gets allowed. Beside each, PREFIX_T<ttl-ms>_TOP sources it
// and keeps one message per subject for Config.MetaTTL: the copy of each
// channel's last message, which outlives the publications (see Epochs).
// The server copies; the store writes nothing for it. Streams are made on
// first use and found again by name after a restart (their TTL is in the
// name, so a restarted node cannot take another's). Three more streams
// keep one message per subject: PREFIX_META (epoch records), PREFIX_IDEM
// (idempotency results) and PREFIX_DELTA (delta bases of channels without
// history).
//
// A channel name becomes one subject token: bytes outside a safe ASCII set
// ('.', whitespace, '*', '>', '%', control and non-ASCII bytes) are written
// %XX, and the empty name is a lone '%'.
//
// A stream per TTL, rather than per namespace or per channel, keeps the
// number of streams at the number of distinct TTLs (a handful, twice),
// which is what JetStream is built for: each stream costs a file store
// directory, a few open files, a goroutine set and, in a cluster, a Raft
// group, so a stream per channel would not scale past thousands of
// channels. The server keeps per-subject state for every channel a stream
// holds, so very many channels with history need server memory (and, as
// the file store indexes subjects per block, disk reads on cold lookups)
// to match. Subject length counts too: a token is at most three times its
// channel name. The copy streams double the server's writes: on the 2-core
// machine this package is measured on, Append does about a sixth fewer
// publications a second than without them (see bench_test.go).
//
// # Positions
//
// Every message carries the channel's offset, epoch, floor, meta TTL and
// version in its headers, so the channel's last message is its whole
// meta. A message holds one publication, or a run of them: consecutive
// publications of the channel from one Append (up to 100, and 768 KB of
// body), with a Gyre-Run header "<first offset> <count>" and a body of
// length-prefixed (uvarint) protobuf Publications; its headers are then
// the position the run's last publication leaves (its offset, floor,
// version). Append publishes the run after top with Nats-Expected-Last-
// Subject-Sequence set to the sequence of the channel's last message:
// JetStream stores it, whole, only if no one wrote to the channel in
// between. When another appender did (another node, the publications
// expired, or the channel moved), the store reads the channel's last
// message by direct get and sends the run again, up to 64 times. So
// offsets are 1, 2, 3, ... with no gap and no repeat within an epoch,
// however many nodes append to a channel, and runs of several appenders
// interleave whole. Each store caches the last (sequence, offset, epoch,
// floor, version) of up to Config.CacheSize channels, so a node that
// keeps appending to a channel needs one round trip per run; appends on
// one node to one channel wait for each other, so that they do not
// conflict. The items of one Append that belong to different channels go
// out together: one round trip per round, one run of each channel per
// round, their acks read on one subscription of the store.
//
// A run holds only items that are stored: an item with an idempotency
// key goes alone (once its key is claimed: see Idempotency), and a run
// ends before an item whose version the run would make stale (that item
// is then checked against the stream's top, and suppressed or sent),
// before an item of another HistoryTTL or without history, and at its
// bounds. A run that failed otherwise than by conflict (a timeout:
// it may have landed) fails all its items.
//
// The floor is the oldest offset History returns: offset-HistorySize+1,
// never lower than the previous message's floor. So a channel whose
// HistorySize shrinks shows its last HistorySize publications at once,
// and one whose HistorySize grows shows more as they come, as with Redis;
// both keep their offsets and epoch, in the same stream. A run may
// straddle the floor: History leaves out what is below it. Messages
// wholly below the floor are purged (without waiting for the answer)
// when the floor jumps and every max(HistorySize, 32) publications: those
// before the message holding the floor when the store wrote it among the
// channel's last few messages, else all but as many messages as the
// channel has offsets from its floor up (which, with runs, keeps more
// than needed until HistoryTTL drops them). Written one by one, a channel
// keeps about twice its HistorySize at most.
//
// # Epochs
//
// A channel's life starts at offset 1 with a new epoch and lasts while its
// position stands: while its stream holds any of its messages, then while
// the copy of its last message is younger than that message's meta TTL
// (PublishOptions.HistoryMetaTTL, else Config.MetaTTL, at most
// Config.MetaTTL). When HistoryTTL expired every publication, the next
// publication continues from the copy: same epoch, next offset, sent with
// an expected last sequence of 0, so that two nodes doing so agree. Once
// the meta TTL passed too, the next publication starts a new life. The
// meta TTL counts from the last publication: unlike Redis, History does
// not extend it (that would be a write per read).
//
// The meta stream (PREFIX_META, one message per channel, MaxAge
// Config.MetaTTL) records each channel's epoch: "pending" when History
// handed it out before the channel had any publication (so that a
// subscriber that arrived first has the epoch the first publication will
// get), "used" with the stream's name and the position the channel
// started from there (a new life, or a move). A record turns "used" by a
// write that JetStream checks against the record's last sequence, and
// only then is anything published in the stream, so one epoch names one
// life even when nodes race or crash. History finds a channel through the
// stream the cache names, else the stream in its record, else (the record
// expired) in each of the store's streams. Starting a life costs two more
// round trips; History of a channel not cached costs one more.
//
// # Moves
//
// A channel whose HistoryTTL changes moves to the stream of the new TTL at
// its next publication, keeping its epoch and offsets: the store writes
// into the old stream, conditionally on its last sequence, a marker that
// holds the position and names the new stream (an appender still using
// the old stream fails its own condition from then on, reads the marker
// and moves the channel back the same way), turns the record to the new
// stream, conditionally, and publishes the next offset there. History
// does not follow a channel into its old stream: the first publication
// after a move is the oldest it returns (a subscriber recovering from
// before the move sees the gap), and what the channel left there is
// purged. Should the record of a channel that moved expire (Config.MetaTTL
// without a move or a new life), a move starts a new life instead.
//
// # History
//
// History reads the channel's last message (its top), then the span of
// offsets asked for, from the floor up; a span within the top's run needs
// nothing more. Offsets of a subject are consecutive and ordered by
// sequence, each message holding a range of them, so the message holding
// the start is found by interpolation search with direct gets by
// next-message-on-subject, and the rest by direct gets sent together, one
// per missing offset (fewer where messages are runs), at sequences
// interpolated between the messages already found: one or two round trips
// when channels interleave evenly. Runs are sliced to the span. Spans
// scattered too unevenly are read through an ephemeral consumer instead. Expired publications are simply
// missing (the caller checks that the first offset follows Since); Limit
// 0 returns the top only; a Since of another epoch or past the top is
// broker.ErrUnrecoverablePosition. A channel with nothing stored gets a
// pending epoch and offset 0.
//
// RemoveHistory writes a marker message carrying the top with the floor
// above it, then purges the channel's subject but for its last message, so
// that the next publication continues the offsets; History skips markers.
//
// # Idempotency, versions, delta
//
// Idempotency results are messages of PREFIX_IDEM on Prefix.i.<hash of
// channel and key>, one per subject, with or without history. Before a
// keyed publication the store reads the key's message: a result younger
// than the TTL it was stored with answers Suppressed with its position.
// Otherwise the store claims the key (a write conditional on the
// subject's last sequence: of two nodes racing on a key, one claims it,
// the other waits for its result, at most Config.Timeout, after which a
// claim counts as lapsed), publishes, and replaces the claim with the
// result. A claim that lapsed may hide a publication that was stored
// (its ack lost to a restart, its node dead before the result): the claim
// taking over keeps the series' origin (the first claim's sequence), and
// every attempt publishes with the message id <key hash>.<origin>, so
// that JetStream's duplicate window (a minute, or the history TTL when
// shorter) answers a stored one as a duplicate; the item is then
// suppressed at the position that message holds. The TTL is
// PublishOptions.IdempotentResultTTL, else
// Config.IdempotentResultTTL, at most Config.MaxIdempotentResultTTL (the
// stream's MaxAge). A keyed publication costs two round trips more.
// Result ages are the NATS server's timestamps compared with the node's
// clock: a skew between them shifts the TTL by as much.
//
// Version and VersionEpoch are compared with the top's; a stale
// publication is suppressed only against a top read from the stream,
// never against the cache alone. For UseDelta items, Prev is the
// channel's previous publication: kept in the cache by a node that
// appends with delta, else read with the top (or its copy).
//
// Items without history are not stored but for their idempotency result
// and their delta base: a UseDelta item writes itself into PREFIX_DELTA
// (one message per channel, conditional on the last sequence like a
// publication, MaxAge Config.MetaTTL, each base valid for its meta TTL)
// and gets the one it replaces as Prev. An item without delta that comes
// to the store drops the base. The NATS broker sends a publication without
// history and without delta (and without key) around the store, so the
// base it gets is the last publication with delta, which may not be the
// last publication: its receiving side delivers a delta only against the
// publication it handed over last, and the full publication otherwise.
// Their position is zero.
//
// # Failures
//
// A store that is closed, or whose connection is not up, fails at once
// with broker.ErrNotAvailable (wrapped), as does any request that gets no
// answer; a connection the store makes has no reconnect buffer, so nothing
// waits for a server that is away. A publish that timed out may have been
// stored: the next Append reads the channel's top again.
package jetstream
