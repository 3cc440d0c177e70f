// Package nats implements broker.Broker on core NATS, so that Gyre nodes
// share publications, join/leave events and control messages through a
// NATS server (or cluster), and, with a broker.Store, history: Redis
// (redisnats) or JetStream. Presence stays with the presence manager
// (memory or Redis). It talks to NATS through the official client,
// github.com/nats-io/nats.go; the engine package imports no NATS code.
//
//	b, err := nats.New(nats.Config{URL: "nats://127.0.0.1:4222"})
//	...
//	node, err := gyre.NewNode(gyre.Config{Broker: b, PresenceManager: memoryPresence})
//
// # Subjects
//
//	<prefix>.control                 control messages, to every node
//	<prefix>.c.<scope>.<name...>     a channel's publications, join and leave
//
// A channel's subject has its pattern scope (the namespace with its
// boundary, "news:"; ":" or "$:" for channels without one) as one token,
// and each dot-separated token of the rest as one more, each escaped
// (bytes a subject cannot carry, '.', '*', '>' and '%' as %XX, an empty
// token as "%"), so that any channel name is one exact subject and never a
// wildcard. A pattern subscription ("news:eu.*.bus") is the subject with
// its wildcard tokens left as they are: NATS delivers a node only what its
// patterns match, once per pattern (broker.PatternFilterBroker).
//
// Messages are protobuf (internal/wirepb): the client protocol's
// Publication with its offset, the stream's epoch, the delta flag and the
// previous publication for delta compression; join and leave with the
// client's info.
//
// # Raw mode
//
// With RawMode a channel's subject is RawMode.Prefix and the channel
// after ChannelReplacements, and its messages are the bare data of
// publications, both ways: what any NATS client publishes on the subject
// reaches the channel's subscribers, and what Gyre publishes reaches any
// NATS subscriber. There is no join/leave, history, tags or client info
// then. A pattern's subject is built the same way, so that replacements
// must leave '*' and '>' tokens alone, and a message received through a
// pattern names the channel found by replacing back (replacements must
// be reversible for that to give the channel published into).
//
// # Order and delivery
//
// Each subscription's messages go through one of a few workers (by hash),
// which hands them to the engine in the order NATS delivered them: per
// publishing connection, in publish order. Without a store there is no
// stream: delivery is at most once, as NATS core is, and a publication
// that needs a stream (history, an idempotency key, a version) is refused
// with ErrNoHistory.
//
// With a store the broker asks it for each publication's position first
// (Store.Append, pipelined for PublishMany), then sends the publication
// with its offset and epoch. Two nodes publishing into one channel at once
// may have their messages cross on the way, so the broker puts each
// subscribed channel in offset order: it reads the stream top when it
// subscribes, hands over the next offset at once, holds one that arrived
// ahead of its predecessors for up to ReorderWait, then reads the missing
// ones from the store. What the store no longer has is reported lost
// (broker.SubscriptionLostHandler), so that recoverable subscribers
// resubscribe and recover, never a silent gap. Publications reaching
// pattern subscriptions are not reordered (they carry no offset).
//
// # Failures
//
// While the connection is down the broker is unhealthy, and publishing
// and subscribing fail with broker.ErrNotAvailable (publications are not
// buffered for later). The client reconnects and subscribes everything
// again by itself. Every connection it makes is counted; a worker that
// sees the count change knows that its subscriptions were down in between,
// before it hands over anything that arrived since: channels with a
// store catch up from it, the others are reported lost, and so are the
// pattern scopes. The same happens for messages the client dropped
// because a worker fell too far behind (Config.QueueSize). A publication
// stored but not sent (the connection dropped in between) is sent again
// once connected.
package nats
