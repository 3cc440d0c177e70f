package jetstream

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/gyrehq/gyre/server/consume"
)

// VersionAtLeast is versionAtLeast, for the tests.
var VersionAtLeast = versionAtLeast

// MessageOf is how c reads m, for the benchmark.
func MessageOf(c consume.Consumer, m jetstream.Msg) consume.Message {
	return c.(*Consumer).message(m)
}

// SetAckWait sets the AckWait of the durable consumers made from now on;
// TestMain shortens it.
func SetAckWait(d time.Duration) { ackWait = d }
