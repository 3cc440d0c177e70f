// Package consumetest is the one suite every consumer type passes (Run),
// on every engine: memory, Redis and NATS (with JetStream history). A
// source package gives it an adapter (Source) that prepares places to
// consume from in a real server of its kind and writes messages into
// them; the suite runs real Gyre servers (server.New) with the consumer
// configured, and checks what reaches channel history and clients.
//
// The package's TestMain must call Main, which stops the Redis and NATS
// servers the suite shares between tests.
package consumetest

import (
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/server/config"
)

// Source is a system that consumers read, as a test drives it.
type Source interface {
	// Type is the consumer type ("kafka").
	Type() string
	// Open prepares a fresh place to consume (a table, topic, stream)
	// with the given number of partitions (1 for sources without
	// partitions). private asks for a server of the test's own, which
	// Place.Outage may stop; otherwise the shared one.
	Open(t testing.TB, partitions int, private bool) Place
}

// Place is where a test's messages are written and read.
type Place interface {
	// Consumer is a consumers[] entry reading the place (enabled), with
	// the given name and consumer group: nodes with the same group share
	// the place. publicationMode configures publication data mode; ok is
	// false when the source has none.
	Consumer(name, group string, publicationMode bool) (c config.Consumer, ok bool)
	// Partitions is the number of partitions.
	Partitions() int
	// Produce stores msgs in partition p, in order, and returns once
	// they are stored.
	Produce(t testing.TB, p int, msgs ...Msg)
	// Outage makes the source unreachable for d (killed and restarted
	// with its data, or paused), then waits until it answers again.
	// Only on private places.
	Outage(t testing.TB, d time.Duration)
}

// Unordered is implemented by places whose nodes share messages with no
// order between them (several nodes bound to one JetStream durable
// consumer): with two nodes, the suite then checks that each message ran
// once, not the order in which they ran.
type Unordered interface {
	UnorderedAcrossNodes() bool
}

// OrderedAcrossNodes reports whether nodes sharing p keep the order of
// its partitions.
func OrderedAcrossNodes(p Place) bool {
	u, ok := p.(Unordered)
	return !ok || !u.UnorderedAcrossNodes()
}

// Msg is one message to produce.
type Msg struct {
	// Method, when set, goes where the source names methods (a header, a
	// field, a column) and Payload is the method's request; when empty,
	// Payload is the whole body ({"method": ..., "payload": ...}) or, in
	// publication data mode, the data.
	Method  string
	Payload []byte
	// Headers are the headers or fields of publication data mode, by
	// name: "centrifugo-channels": "a,b", and so on.
	Headers map[string]string
}

// Main runs the package's tests and stops the servers they shared: the
// suite's Redis and NATS, then what each of stops stops (a source's
// shared server, as pgtest.Stop).
func Main(m *testing.M, stops ...func()) { enginetest.Main(m, stops...) }
