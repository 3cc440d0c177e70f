package pgoutbox_test

import (
	"testing"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/pgoutbox"
	"github.com/gyrehq/gyre/server/consume/pgoutbox/pgtest"
)

// TestTrace: a row is a span of its own trace (the outbox carries no
// trace context), named by its table and partition.
func TestTrace(t *testing.T) {
	t.Parallel()
	consumetest.Trace(t, pgtest.Source(), consumetest.TraceWant{
		New: func(c config.Consumer, d *consume.Dispatcher) (consume.Consumer, error) {
			return pgoutbox.New(c.Postgres, nil, d)
		},
		System:      "postgresql",
		Destination: func(_ consumetest.Place, c config.Consumer) string { return c.Postgres.OutboxTableName },
		Partition:   true,
	})
}
