package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gyrehq/gyre/server/config"
)

// Table is an outbox table of a test's own: Centrifugo's columns, and an
// index on (partition, id) for the consumer's reads.
type Table struct {
	// Name is the table's name, unique across test binaries sharing a
	// server.
	Name string
	// DSN is the server's.
	DSN string
	// Partitions is the number of partitions rows go to (0 to
	// Partitions-1).
	Partitions int

	pool *pgxpool.Pool
}

var tables atomic.Int64

// NewTable creates an outbox table of partitions partitions on the server
// of dsn; it is dropped when the test ends.
func NewTable(t testing.TB, dsn string, partitions int) *Table {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	tb := &Table{
		Name:       "outbox_" + strconv.FormatInt(tables.Add(1), 10) + "_" + hex.EncodeToString(b[:]),
		DSN:        dsn,
		Partitions: partitions,
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	// A test may have restarted the server: check each connection before
	// use rather than fail on one the restart cut.
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return true }
	if tb.pool, err = pgxpool.NewWithConfig(context.Background(), cfg); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		// The server may be down (a test of outages): drop what can be.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = tb.pool.Exec(ctx, "DROP TABLE IF EXISTS "+tb.Name+"; DROP FUNCTION IF EXISTS "+tb.Name+"_notify()")
		tb.pool.Close()
	})
	tb.Exec(t, `CREATE TABLE `+tb.Name+` (
		id BIGSERIAL PRIMARY KEY,
		method text NOT NULL DEFAULT '',
		payload JSONB NOT NULL,
		partition INTEGER NOT NULL DEFAULT 0,
		created_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP NOT NULL
	)`)
	tb.Exec(t, "CREATE INDEX "+tb.Name+"_partition_id ON "+tb.Name+" (partition, id)")
	return tb
}

// Notify adds a trigger that NOTIFYs the channel named as the table with
// the partition of each row inserted, and returns that channel.
func (tb *Table) Notify(t testing.TB) string {
	t.Helper()
	tb.Exec(t, `CREATE FUNCTION `+tb.Name+`_notify() RETURNS trigger AS $$
		BEGIN
			PERFORM pg_notify('`+tb.Name+`', NEW.partition::text);
			RETURN NULL;
		END;
		$$ LANGUAGE plpgsql`)
	tb.Exec(t, `CREATE TRIGGER `+tb.Name+`_notify AFTER INSERT ON `+tb.Name+`
		FOR EACH ROW EXECUTE FUNCTION `+tb.Name+`_notify()`)
	return tb.Name
}

// Consumer is the configuration of a consumer of the table, with
// Centrifugo's defaults for what the table does not decide.
func (tb *Table) Consumer() config.PostgresConsumer {
	return config.PostgresConsumer{
		DSN:                   tb.DSN,
		OutboxTableName:       tb.Name,
		NumPartitions:         tb.Partitions,
		PartitionSelectLimit:  100,
		PartitionPollInterval: 300 * time.Millisecond,
	}
}

// Row is a row to insert.
type Row struct {
	Partition int
	// Method names the API method of Payload; empty, Payload is
	// {"method": ..., "payload": ...}.
	Method string
	// Payload must be JSON (the column is JSONB).
	Payload []byte
}

// Insert inserts rows in one transaction, their ids in the order given.
func (tb *Table) Insert(t testing.TB, rows ...Row) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := tb.pool.CopyFrom(ctx, pgx.Identifier{tb.Name}, []string{"partition", "method", "payload"},
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			return []any{rows[i].Partition, rows[i].Method, json.RawMessage(rows[i].Payload)}, nil
		}))
	if err != nil {
		t.Fatalf("pgtest: insert %d rows into %s: %v", len(rows), tb.Name, err)
	}
	if int(n) != len(rows) {
		t.Fatalf("pgtest: inserted %d rows into %s of %d", n, tb.Name, len(rows))
	}
}

// Exec runs sql on the table's server.
func (tb *Table) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := tb.pool.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// Count is the number of rows in the table.
func (tb *Table) Count(t testing.TB) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var n int
	if err := tb.pool.QueryRow(ctx, "SELECT count(*) FROM "+tb.Name).Scan(&n); err != nil {
		t.Fatalf("pgtest: count rows of %s: %v", tb.Name, err)
	}
	return n
}

// Pool is the table's connection pool, for what the other methods do not
// do.
func (tb *Table) Pool() *pgxpool.Pool { return tb.pool }
