package redisstreamtest

import (
	"testing"
	"time"

	"github.com/gyrehq/gyre/server/config"
)

// The contract of the shared consumer suite (server/consume/consumetest),
// kept here until that package exists; then these give way to its types.

// source is a kind of source the suite runs on.
type source interface {
	Type() string
	Open(t testing.TB, partitions int, private bool) place
}

// place is a fresh place to consume: here, streams of one Redis.
type place interface {
	Consumer(name, group string, publicationMode bool) (c config.Consumer, ok bool)
	Partitions() int
	Produce(t testing.TB, p int, msgs ...Msg)
	Outage(t testing.TB, d time.Duration)
}

// Msg is one message to produce.
type Msg struct {
	Method  string
	Payload []byte
	Headers map[string]string
}
