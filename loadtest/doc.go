// Package loadtest drives load against any server that speaks the
// Centrifugo client protocol v2 and its v6 server HTTP API (Gyre, or
// Centrifugo itself), so that they can be measured side by side. The
// gyre command runs it as "gyre bench"; docs/bench.md shows how.
//
// # Scenarios
//
//   - idle: open connections with a token and some subscriptions each,
//     hold them, and read the server's memory per connection and its CPU
//     while idle from /proc.
//   - fanout: subscribers of one channel, publications through the API
//     (publish, or batch) at a rate or as fast as possible: deliveries
//     per second, end-to-end latency, losses and reordering per
//     subscriber, server CPU per delivery.
//   - channels: a channel per connection and broadcasts to all of them:
//     API latency and delivery time.
//   - connect: connections per second, token check included.
//   - churn: connections that come and go over the nodes of a cluster,
//     each subscribed to a channel picked at random for a while:
//     connects, subscribes and disconnects per second, their latency and
//     failures, and each node's CPU time per subscribe and per
//     disconnect, which is where a server's hooks on them show.
//
// [Run] runs one and returns a [Result]; every scenario is bounded by a
// duration or a count. Config.URL may name several nodes, and every
// scenario spreads its connections over them in turn, so that one
// channel's subscribers are on every node; Config.API may name several
// too, the publishers taking them in turn. With Config.Reconnect, a
// connection whose node goes away comes back on the next one, and the
// result says how long that took.
//
// # Measuring
//
// Each publication's data carries its publisher, a sequence number and
// the publisher's wall clock (see payload.go), so latency is measured
// across processes on one machine, and each subscriber checks per
// publisher that sequence numbers only grow and, at the end, that it got
// as many publications as the server accepted.
//
// Latencies go into a log-linear histogram of this package (64 buckets
// per power of two, 1.6% resolution) rather than HdrHistogram: every
// connection goroutine records into one shared histogram with atomic
// adds and no lock, and child processes send theirs to the parent as a
// short sparse list to merge.
//
// # The client
//
// The load side must not be the bottleneck. A connection is one
// goroutine and a 2 KiB read buffer: it dials, connects and subscribes,
// then reads, answering pings itself. Message buffers come from a pool
// only while a message is handled, so an idle connection holds none.
// Publications are recognised without decoding: in JSON frames by the
// payload's marker, in protobuf frames by walking three field tags down
// to the data. Anything else is decoded in full with package protocol.
//
// # Compression
//
// With Config.Compression every connection offers permessage-deflate
// (RFC 7692) as browsers do, takes any answer a client can honour (with
// or without context takeover, any server window) and fails on one it
// cannot, and inflates compressed messages with klauspost/compress's
// flate: pooled inflaters, and with context takeover a window kept per
// connection. Without context takeover every subscriber of a publication
// gets the same compressed bytes, so a process inflates each distinct
// message once and its connections compare their bytes with it (see
// inflatedCache): inflating costs a hundred times what handling a
// delivery does, and the tool must not become the bottleneck. The result
// counts the connections that negotiated compression and every byte
// received, on the wire and inflated. PayloadJSON publishes a market
// feed's JSON documents, which compress as real ones do, where the
// default padding compresses without limit.
//
// # Churn
//
// Churn keeps Config.Conns slots, each a goroutine that has a connection
// set up, holds it and makes it leave, over and over: a fixed set of
// setters per process dials, connects and subscribes for the slots (as
// in the other scenarios, so that the deep stacks of the dial stay few),
// and a slot only reads while its connection stays, answering pings, and
// then sends a WebSocket close (after an unsubscribe with
// Config.Unsubscribe) and waits for the server to close the TCP
// connection, so that a disconnect counted is one the server has taken
// in. Slot i is always user i%Users; the node and the source address go
// in turn by connection. A slot's first connection stays what is left of
// a stay at a random moment of it, so that disconnects come at their
// steady rate from the start. The counts are per node, and add up at
// the end: every connect is a disconnect or a drop.
//
// # Processes
//
// A process may hold at most 20,000 open files on the machines this is
// run on, the server's included when both share a limit. Above 10,000
// connections (or with Config.Procs) the connections are split over
// child processes that run [RunWorker]: the same binary started again
// with a hidden flag, speaking JSON lines over its standard input and
// output. The parent publishes, aggregates stats four times a second and
// merges the children's results.
package loadtest
