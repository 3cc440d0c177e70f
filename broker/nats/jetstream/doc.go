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
// Prefix.s<size>t<ttl-ms>.<channel token>, in the stream of its history
// settings: one stream per distinct (HistorySize, HistoryTTL) pair, named
// PREFIX_S<size>T<ttl-ms>, with MaxMsgsPerSubject = HistorySize, MaxAge =
// HistoryTTL, file storage, DiscardOld and direct gets allowed. Streams
// are made on first use and found again by name after a restart (their
// limits are in the name, so a restarted node cannot take another's).
// A channel name becomes one subject token: bytes outside a safe ASCII set
// ('.', whitespace, '*', '>', '%', control and non-ASCII bytes) are written
// %XX, and the empty name is a lone '%'.
//
// One stream per setting, rather than per namespace or per channel, keeps
// the number of streams at the number of distinct settings (a handful),
// which is what JetStream is built for: each stream costs a file store
// directory, a few open files, a goroutine set and, in a cluster, a Raft
// group, so a stream per channel would not scale past thousands of
// channels, and a stream per namespace would cost more for the same
// limits. Channels of a stream share its duplicate window and its file
// blocks; the server keeps per-subject state for every channel a stream
// holds, so very many channels with history need server memory (and, as
// the file store indexes subjects per block, disk reads on cold lookups)
// to match. Subject length counts too: a token is at most three times its
// channel name.
//
// # Positions
//
// Every message carries the channel's offset, epoch and version in its
// headers, so the channel's last message is its whole meta. Append
// publishes offset top+1 with Nats-Expected-Last-Subject-Sequence set to
// the sequence of that last message: JetStream stores it only if no one
// wrote to the channel in between. When another appender did (another
// node, or the publications expired), the store reads the channel's last
// message by direct get and sends again, up to 64 times. So offsets are
// 1, 2, 3, ... with no gap and no repeat within an epoch, however many
// nodes append to a channel. Each store caches the last (sequence, offset,
// epoch, version) of up to Config.CacheSize channels, so a node that keeps
// appending to a channel needs one round trip per publication; appends on
// one node to one channel wait for each other, so that they do not
// conflict. The items of one Append that belong to different channels go
// out together (asynchronous publishes, then the acks): one round trip per
// round, one item of each channel per round.
//
// # Epochs
//
// A channel's life in its stream starts at offset 1 with a new epoch
// and lasts while the stream holds any of its messages. When every
// publication has expired (HistoryTTL) the subject is empty, and the
// next publication starts a new life: a new epoch, offset 1. The stream
// cannot keep a channel's meta past its last message (nats-server 2.9 has
// no per-message TTL), so PublishOptions.HistoryMetaTTL and
// HistoryOptions.MetaTTL are not used: the meta lives as long as the
// newest publication.
//
// A small meta stream (PREFIX_META, one message per channel, MaxAge
// Config.MetaTTL) records each channel's epoch: "pending" when History
// handed it out before the channel had any publication (so that a
// subscriber that arrived first has the epoch the first publication will
// get), "used" with the stream's name once a life started with it. A life
// starts only after its epoch's record turned "used" by a write that
// JetStream checks against the record's last sequence, so one epoch names
// one life even when nodes race or crash. History finds a channel through
// the stream the cache names, else the stream in its record, else (the
// record expired) in each of the store's streams. Starting a life costs
// two more round trips; History of a channel not cached costs one more.
//
// A channel whose namespace changes HistorySize or HistoryTTL moves to the
// stream of its new settings at its next publication: a new life there,
// with a new epoch and offset 1. Its old positions cannot be recovered
// (subscribers are told so) and its old publications are purged.
//
// # History
//
// History reads the channel's last message (its top), then the span of
// offsets asked for. Offsets of a subject are consecutive and ordered by
// sequence, so the start is found by interpolation search with direct
// gets by next-message-on-subject, and the rest by direct gets sent
// together, one per offset, at sequences interpolated between the
// messages already found: one or two round trips when channels interleave
// evenly. Spans scattered too unevenly are read through an ephemeral
// consumer instead. Evicted publications are simply missing (the caller
// checks that the first offset follows Since); Limit 0 returns the top
// only; a Since of another epoch or past the top is
// broker.ErrUnrecoverablePosition. A channel with nothing stored gets a
// pending epoch and offset 0.
//
// RemoveHistory writes a marker message carrying the top (offset, epoch,
// version), then purges the channel's subject but for its last message, so
// that the next publication continues the offsets; History skips markers.
//
// # Idempotency, versions, delta
//
// An idempotency key becomes the message's Nats-Msg-Id (hashed with the
// channel), so JetStream drops a repeat within the stream's duplicate
// window, min(Config.DuplicateWindow, HistoryTTL), whatever
// PublishOptions.IdempotentResultTTL asks; the repeat's result is the
// first's position, read from the sequence the duplicate ack names (the
// top, if it was evicted meanwhile). Version and VersionEpoch are compared
// with the top's; a stale publication is suppressed only against a top
// read from the stream, never against the cache alone. For UseDelta
// items, Prev is the channel's previous publication: kept in the cache by
// a node that appends with delta, else read with the top.
//
// Items without history (HistorySize or HistoryTTL zero) are not stored:
// they get a zero position, no idempotency and no Prev.
//
// # Failures
//
// A store that is closed, or whose connection is not up, fails at once
// with broker.ErrNotAvailable (wrapped), as does any request that gets no
// answer; a connection the store makes has no reconnect buffer, so nothing
// waits for a server that is away. A publish that timed out may have been
// stored: the next Append reads the channel's top again.
package jetstream
