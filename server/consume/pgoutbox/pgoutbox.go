// Package pgoutbox consumes a PostgreSQL outbox table: rows of server API
// commands that the application inserts in the transactions that make the
// changes they announce, so that a command is published if and only if
// its transaction commits.
//
// The table is Centrifugo's:
//
//	id BIGSERIAL PRIMARY KEY, method text, payload JSONB,
//	partition INTEGER default 0, created_at timestamptz
//
// A row's method names the API method and its payload is the method's
// request; a row whose method is empty (or NULL) has the whole command in
// its payload, {"method": ..., "payload": {...}}. The payload is read as
// PostgreSQL writes the JSONB value out, and compacted: a publication's
// data is the JSON the application inserted, without whitespace, with an
// object's keys in JSONB's order (shorter keys first), which JSON gives no
// meaning to.
//
// # Rounds
//
// Each partition 0..num_partitions-1 is read by a goroutine of its own, in
// rounds. A round is one transaction: it takes the partition's advisory
// lock (so that one node at a time reads a partition, whatever the number
// of nodes), selects up to partition_select_limit rows of the partition in
// id order, runs them as one batch through the dispatcher, deletes the
// rows it ran and commits. The lock and the delete in one transaction are
// what keeps the order per partition across nodes and makes delivery at
// least once: a row is gone only once its command ran, and a round cut
// short (the node or the database dies before the commit) leaves its rows
// to the next round, which runs them again.
//
// A round that found a full batch is followed at once by the next; one
// that found fewer rows waits partition_poll_interval, or less when a
// NOTIFY on partition_notification_channel names the partition.
package pgoutbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gyrehq/gyre/internal/faillog"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
)

// lockPrefix starts the name of a partition's advisory lock, followed by
// the consumer's name and the partition number, hashed with hashtext.
// It is Centrifugo's, so that while a deployment moves from Centrifugo to
// Gyre, nodes of both reading one table under the same consumer name
// still take turns on each partition rather than run its rows twice and
// out of order.
const lockPrefix = "centrifugo_partition_lock_"

// commitTimeout bounds the delete and the commit that end a round, which
// run even when the consumer is stopping: what ran must be deleted, or it
// runs again. A database that does not answer within it has the round's
// rows run again later.
const commitTimeout = 30 * time.Second

// tableName is a table name, optionally with its schema, that can go into
// a query as it is: folded to lower case as PostgreSQL folds any unquoted
// name, as Centrifugo uses it.
var tableName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*(\.[a-zA-Z_][a-zA-Z0-9_]*)?$`)

// Consumer reads one outbox table.
type Consumer struct {
	cfg config.PostgresConsumer
	d   *consume.Dispatcher
	// poolCfg connects to dsn; listenCfg, nil without a notification
	// channel, to partition_notification_dsn (or dsn).
	poolCfg   *pgxpool.Config
	listenCfg *pgx.ConnConfig
	// lockNames are the advisory lock names of the partitions.
	lockNames []string
	// The queries, with the table name in them.
	selectSQL, deleteSQL, countSQL string
	// wake has a slot per partition: a value there cuts the partition's
	// wait short.
	wake []chan struct{}
	// active is set when a round found rows, so that the lag is counted
	// again; see lag.go.
	active atomic.Bool
	// lagEvery is how often the lag is counted: lagInterval.
	lagEvery time.Duration
	// fails logs bad notifications without flooding the log.
	fails *faillog.Log
}

// New makes the consumer of cfg, which connects with tlsCfg when not nil
// and runs the rows through d. It connects to nothing: Run does, and rides
// out a database that is not there yet.
func New(cfg config.PostgresConsumer, tlsCfg *tls.Config, d *consume.Dispatcher) (consume.Consumer, error) {
	if !tableName.MatchString(cfg.OutboxTableName) {
		return nil, fmt.Errorf("pgoutbox: outbox_table_name %q is not a table name", cfg.OutboxTableName)
	}
	if cfg.NumPartitions < 1 {
		return nil, fmt.Errorf("pgoutbox: num_partitions %d: want at least 1", cfg.NumPartitions)
	}
	if cfg.PartitionSelectLimit < 1 {
		return nil, fmt.Errorf("pgoutbox: partition_select_limit %d: want at least 1", cfg.PartitionSelectLimit)
	}
	if cfg.PartitionPollInterval <= 0 {
		return nil, fmt.Errorf("pgoutbox: partition_poll_interval %s: want more than 0", cfg.PartitionPollInterval)
	}
	poolCfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("pgoutbox: dsn: %w", err)
	}
	useTLS(&poolCfg.ConnConfig.Config, tlsCfg)
	if !strings.Contains(cfg.DSN, "pool_max_conns") {
		// A partition holds a connection for its round (and, with the
		// blocking lock, while it waits for the lock): one each, and one
		// to count the lag, unless the DSN says otherwise.
		poolCfg.MaxConns = int32(min(cfg.NumPartitions, 64) + 1)
	}
	nameConnections(poolCfg.ConnConfig.RuntimeParams, "gyre consumer "+d.Name())
	c := &Consumer{
		cfg: cfg, d: d, poolCfg: poolCfg,
		lockNames: make([]string, cfg.NumPartitions),
		wake:      make([]chan struct{}, cfg.NumPartitions),
		fails:     faillog.New(d.Logger()),
		lagEvery:  lagInterval,
	}
	for p := range cfg.NumPartitions {
		c.lockNames[p] = lockPrefix + d.Name() + strconv.Itoa(p)
		c.wake[p] = make(chan struct{}, 1)
	}
	if cfg.PartitionNotificationChannel != "" {
		dsn := cfg.PartitionNotificationDSN
		if dsn == "" {
			dsn = cfg.DSN
		}
		if c.listenCfg, err = pgx.ParseConfig(dsn); err != nil {
			return nil, fmt.Errorf("pgoutbox: partition_notification_dsn: %w", err)
		}
		useTLS(&c.listenCfg.Config, tlsCfg)
		nameConnections(c.listenCfg.RuntimeParams, "gyre consumer "+d.Name()+" listen")
	}
	t := cfg.OutboxTableName
	c.selectSQL = "SELECT id, coalesce(method, ''), payload FROM " + t + " WHERE partition = $1 ORDER BY id LIMIT $2"
	c.deleteSQL = "DELETE FROM " + t + " WHERE id = ANY($1)"
	c.countSQL = "SELECT count(*) FROM (SELECT 1 FROM " + t + " WHERE partition >= 0 AND partition < $1 LIMIT $2) AS waiting"
	return c, nil
}

// nameConnections names the connections in pg_stat_activity, unless the
// DSN names them.
func nameConnections(params map[string]string, name string) {
	if params["application_name"] == "" {
		params["application_name"] = name
	}
}

// useTLS has every connection attempt of cfg (the host and its fallbacks)
// use tlsCfg, verifying the certificate against the host's name unless
// tlsCfg names a server; with tlsCfg nil, cfg keeps what its DSN's sslmode
// asks. With TLS configured there is no plain fallback, whatever sslmode
// says: tls.enabled asks for TLS.
func useTLS(cfg *pgconn.Config, tlsCfg *tls.Config) {
	if tlsCfg == nil {
		return
	}
	forHost := func(host string) *tls.Config {
		if strings.HasPrefix(host, "/") {
			return nil // a Unix socket: PostgreSQL has no TLS there
		}
		t := tlsCfg.Clone()
		if t.ServerName == "" {
			t.ServerName = host
		}
		return t
	}
	cfg.TLSConfig = forHost(cfg.Host)
	type hostPort struct {
		host string
		port uint16
	}
	seen := map[hostPort]bool{{cfg.Host, cfg.Port}: true}
	var fallbacks []*pgconn.FallbackConfig
	for _, f := range cfg.Fallbacks {
		hp := hostPort{f.Host, f.Port}
		if seen[hp] {
			continue
		}
		seen[hp] = true
		fallbacks = append(fallbacks, &pgconn.FallbackConfig{Host: f.Host, Port: f.Port, TLSConfig: forHost(f.Host)})
	}
	cfg.Fallbacks = fallbacks
}

// Run reads the partitions until ctx ends, then lets each finish its
// round and returns nil.
func (c *Consumer) Run(ctx context.Context) error {
	pool, err := pgxpool.NewWithConfig(context.WithoutCancel(ctx), c.poolCfg)
	if err != nil {
		return fmt.Errorf("pgoutbox: %w", err)
	}
	defer pool.Close()
	c.d.SetLag(-1)
	var wg sync.WaitGroup
	for p := range c.cfg.NumPartitions {
		wg.Go(func() { c.partition(ctx, pool, p) })
	}
	if c.listenCfg != nil {
		wg.Go(func() { c.listen(ctx) })
	}
	wg.Go(func() { c.countLag(ctx, pool) })
	wg.Wait()
	return nil
}

// partition runs the rounds of partition p until ctx ends.
func (c *Consumer) partition(ctx context.Context, pool *pgxpool.Pool, p int) {
	poll := time.NewTimer(0)
	defer poll.Stop()
	attempt := 0
	for ctx.Err() == nil {
		full, err := c.round(ctx, pool, p)
		switch {
		case err == nil:
			attempt = 0
			c.d.SourceOK()
			if full {
				continue
			}
		case errors.Is(err, errLockBusy):
			// Another node reads the partition; wait as for new rows,
			// and try again.
			attempt = 0
			c.d.SourceOK()
		case ctx.Err() != nil:
			return
		default:
			c.d.SourceFailed("partition "+strconv.Itoa(p), err)
			if !c.d.Backoff(ctx, attempt) {
				return
			}
			attempt++
			continue
		}
		poll.Reset(c.cfg.PartitionPollInterval)
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		case <-c.wake[p]:
			poll.Stop()
		}
	}
}

// wakeAll has every partition read at once, as after notifications were
// missed.
func (c *Consumer) wakeAll() {
	for p := range c.wake {
		c.wakeUp(p)
	}
}

func (c *Consumer) wakeUp(p int) {
	select {
	case c.wake[p] <- struct{}{}:
	default:
	}
}
