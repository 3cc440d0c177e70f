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
//
// [Run] runs one and returns a [Result]; every scenario is bounded by a
// duration or a count.
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
