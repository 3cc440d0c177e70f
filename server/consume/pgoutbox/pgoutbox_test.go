package pgoutbox_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/pgoutbox"
	"github.com/gyrehq/gyre/server/consume/pgoutbox/pgtest"
	"github.com/gyrehq/gyre/token"
)

// TestSuite runs the suite every consumer type passes, on every engine.
func TestSuite(t *testing.T) {
	consumetest.Run(t, pgtest.Source())
}

// TestOrderPerPartition: rows of four partitions, inserted in mixed
// transactions while the server consumes, reach each partition's channel
// once each and in id order, batch after batch; the table ends empty.
func TestOrderPerPartition(t *testing.T) {
	t.Parallel()
	const partitions, perPartition = 4, 600
	tb := pgtest.NewTable(t, pgtest.DSN(t), partitions)
	s := startServer(t, consumerOf(tb.Name, tb.Consumer()))
	rec := record(t, s.Node(), "p0", "p1", "p2", "p3")
	// Six transactions, each with 100 rows of every partition mixed.
	for tx := range perPartition / 100 {
		var rows []pgtest.Row
		for i := range 100 {
			for p := range partitions {
				rows = append(rows, publishRows(p, tx*100+i, 1)...)
			}
		}
		tb.Insert(t, rows...)
	}
	for p := range partitions {
		ch := channelOf(p)
		waitFor(t, ch+" to see every row", func() bool { return len(rec.of(ch)) >= perPartition })
		checkSeq(t, ch, rec.of(ch), upTo(perPartition))
	}
	waitFor(t, "the table to be empty", func() bool { return tb.Count(t) == 0 })
}

// TestMethods: every kind of row runs as the HTTP API would run it: a
// method named by the column or in the payload, publish, broadcast, a
// batch, subscribe, unsubscribe, disconnect, history_remove, in order.
func TestMethods(t *testing.T) {
	t.Parallel()
	tb := pgtest.NewTable(t, pgtest.DSN(t), 1)
	pc := tb.Consumer()
	pc.PartitionNotificationChannel = tb.Notify(t)
	s := startServer(t, consumerOf(tb.Name, pc))
	rec := record(t, s.Node(), "a", "b", "c", "hist:h")

	url := "ws://" + s.Addr().String() + "/connection/websocket"
	cl := wstest.Dial(t, url, protocol.TypeJSON)
	tok, err := token.SignHMAC("HS256", []byte(testSecret), map[string]any{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if r := cl.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok}}); r.Error != nil {
		t.Fatalf("connect: %d %s", r.Error.Code, r.Error.Message)
	}

	row := func(method, payload string) pgtest.Row {
		return pgtest.Row{Method: method, Payload: []byte(payload)}
	}
	tb.Insert(t,
		row("publish", `{"channel":"a","data":{"n":0}}`),
		row("", `{"method":"publish","payload":{"channel":"a","data":{"n":1}}}`),
		row("broadcast", `{"channels":["a","b"],"data":{"n":2}}`),
		row("batch", `{"commands":[{"publish":{"channel":"a","data":{"n":3}}},{"broadcast":{"channels":["b","c"],"data":{"n":4}}}]}`),
		row("", `{"method":"batch","payload":{"commands":[{"publish":{"channel":"c","data":{"n":5}}}]}}`),
		row("publish", `{"channel":"hist:h","data":{"n":6}}`),
		row("subscribe", `{"user":"alice","channel":"c"}`),
	)
	waitFor(t, "channel c to see 2 publications", func() bool { return len(rec.of("c")) == 2 })
	checkSeq(t, "a", rec.of("a"), []int{0, 1, 2, 3})
	checkSeq(t, "b", rec.of("b"), []int{2, 4})
	checkSeq(t, "c", rec.of("c"), []int{4, 5})
	checkSeq(t, "hist:h", rec.of("hist:h"), []int{6})
	cl.WaitPush("alice subscribed to c", func(p *protocol.Push) bool { return p.Channel == "c" && p.Subscribe != nil })

	tb.Insert(t,
		row("publish", `{"channel":"c","data":{"n":7}}`),
		row("history_remove", `{"channel":"hist:h"}`),
		row("unsubscribe", `{"user":"alice","channel":"c"}`),
		row("", `{"method":"disconnect","payload":{"user":"alice","disconnect":{"code":4321,"reason":"bye"}}}`),
	)
	cl.WaitPubs("c", 1)
	cl.WaitPush("alice unsubscribed from c", func(p *protocol.Push) bool { return p.Channel == "c" && p.Unsubscribe != nil })
	if closed := cl.WaitClose(); closed.Code != 4321 {
		t.Fatalf("closed with %d %q, want 4321", closed.Code, closed.Reason)
	}
	pubs, _, err := s.Node().History("hist:h", 10, nil, false)
	if err != nil || len(pubs) != 0 {
		t.Fatalf("history after history_remove: %d publications, error %v", len(pubs), err)
	}
	waitFor(t, "the table to be empty", func() bool { return tb.Count(t) == 0 })
}

// TestMalformedRows: rows that can never run (a payload that is no
// request, an unknown method, a body without a method, a request the
// method refuses) are skipped, counted and deleted; the rows around them
// run in order.
func TestMalformedRows(t *testing.T) {
	t.Parallel()
	tb := pgtest.NewTable(t, pgtest.DSN(t), 1)
	b := startBare(t, tb.Name, tb.Consumer(), nil)
	rec := record(t, b.node, "a")
	tb.Insert(t,
		pgtest.Row{Method: "publish", Payload: []byte(`{"channel":"a","data":{"n":0}}`)},
		pgtest.Row{Method: "publish", Payload: []byte(`"not a request"`)},
		pgtest.Row{Method: "no_such_method", Payload: []byte(`{"channel":"a","data":{"n":-2}}`)},
		pgtest.Row{Method: "", Payload: []byte(`{"channel":"a","data":{"n":-3}}`)},
		pgtest.Row{Method: "", Payload: []byte(`[1, 2]`)},
		pgtest.Row{Method: "publish", Payload: []byte(`{"data":{"n":-5}}`)},
		pgtest.Row{Method: "publish", Payload: []byte(`{"channel":"a","data":{"n":1}}`)},
	)
	waitFor(t, "channel a to see 2 publications", func() bool { return len(rec.of("a")) >= 2 })
	checkSeq(t, "a", rec.of("a"), []int{0, 1})
	waitFor(t, "the table to be empty", func() bool { return tb.Count(t) == 0 })
	if st := b.stats(); st.Processed != 2 || st.Skipped != 5 {
		t.Fatalf("processed %d, skipped %d; want 2 and 5", st.Processed, st.Skipped)
	}
	// A row whose method is NULL (a table made without NOT NULL) is read as
	// one whose payload names the method.
	tb.Exec(t, "ALTER TABLE "+tb.Name+" ALTER COLUMN method DROP NOT NULL")
	tb.Exec(t, "INSERT INTO "+tb.Name+` (method, payload) VALUES (NULL, '{"method":"publish","payload":{"channel":"a","data":{"n":2}}}')`)
	waitFor(t, "channel a to see 3 publications", func() bool { return len(rec.of("a")) >= 3 })
	checkSeq(t, "a", rec.of("a"), []int{0, 1, 2})
}

// TestNotify: with a poll interval of an hour, a NOTIFY naming a partition
// has it read: rows are delivered because of notifications alone. Bad
// notifications are ignored and leave the listener working. The listener
// connects through partition_notification_dsn.
func TestNotify(t *testing.T) {
	t.Parallel()
	const partitions = 4
	tb := pgtest.NewTable(t, pgtest.DSN(t), partitions)
	pc := tb.Consumer()
	pc.PartitionPollInterval = time.Hour
	pc.PartitionNotificationChannel = tb.Notify(t)
	pc.PartitionNotificationDSN = tb.DSN + "&application_name=listener"
	s := startServer(t, consumerOf(tb.Name, pc))
	rec := record(t, s.Node(), "p0", "p1", "p2", "p3")
	// Each partition reads once at the start and once more when the
	// listener is in place; after a row delivered, nothing but a
	// notification has a partition read again within the hour.
	for round := range 3 {
		for p := range partitions {
			tb.Insert(t, publishRows(p, round, 1)...)
		}
		for p := range partitions {
			ch := channelOf(p)
			waitFor(t, ch+" to see row "+strconv.Itoa(round), func() bool { return len(rec.of(ch)) == round+1 })
		}
		// Notifications that name no partition are ignored.
		for _, payload := range []string{"x", "-1", "4", "99999999999999999999", ""} {
			tb.Exec(t, "SELECT pg_notify($1, $2)", pc.PartitionNotificationChannel, payload)
		}
	}
	for p := range partitions {
		checkSeq(t, channelOf(p), rec.of(channelOf(p)), upTo(3))
	}
}

// TestLag: the consumer counts the rows waiting, and takes turns with
// another holder of a partition's advisory lock, named as Centrifugo
// names it, waiting for it or (use_try_lock) skipping the partition.
func TestLag(t *testing.T) {
	t.Parallel()
	for _, try := range []bool{false, true} {
		t.Run("use_try_lock="+strconv.FormatBool(try), func(t *testing.T) {
			t.Parallel()
			tb := pgtest.NewTable(t, pgtest.DSN(t), 2)
			ctx := context.Background()
			// Another consumer (of Centrifugo, say) holds partition 1.
			holder, err := tb.Pool().Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Release()
			lock := "centrifugo_partition_lock_" + tb.Name + "1"
			if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock(hashtext($1))", lock); err != nil {
				t.Fatal(err)
			}
			pc := tb.Consumer()
			pc.UseTryLock = try
			pc.PartitionPollInterval = 20 * time.Millisecond
			b := startBare(t, tb.Name, pc, func(c consume.Consumer) { pgoutbox.SetLagInterval(c, 20*time.Millisecond) })
			rec := record(t, b.node, "p0", "p1")
			tb.Insert(t, publishRows(1, 0, 7)...)
			tb.Insert(t, publishRows(0, 0, 3)...)
			waitFor(t, "partition 0 to be read", func() bool { return len(rec.of("p0")) == 3 })
			waitFor(t, "a lag of 7", func() bool { return b.stats().Lag == 7 })
			if n := len(rec.of("p1")); n != 0 {
				t.Fatalf("partition 1 read %d rows while another held its lock", n)
			}
			if _, err := holder.Exec(ctx, "SELECT pg_advisory_unlock(hashtext($1))", lock); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "partition 1 to be read", func() bool { return len(rec.of("p1")) == 7 })
			checkSeq(t, "p1", rec.of("p1"), upTo(7))
			waitFor(t, "a lag of 0", func() bool { return b.stats().Lag == 0 })
		})
	}
}

// TestDatabaseOutage: PostgreSQL killed mid-stream and started again: the
// consumer rides it out and goes on; no row is lost, and each partition's
// rows come in order (those of a round cut short by the kill come again,
// as at-least-once allows).
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	const partitions, before, after = 4, 1500, 300
	srv := pgtest.Start(t)
	tb := pgtest.NewTable(t, srv.DSN, partitions)
	s := startServer(t, consumerOf(tb.Name, tb.Consumer()))
	rec := record(t, s.Node(), "p0", "p1", "p2", "p3")
	for p := range partitions {
		tb.Insert(t, publishRows(p, 0, before)...)
	}
	waitFor(t, "rows to flow", func() bool { return rec.distinct("p0")+rec.distinct("p1") > 200 })
	srv.Outage(t, 500*time.Millisecond)
	for p := range partitions {
		tb.Insert(t, publishRows(p, before, after)...)
	}
	for p := range partitions {
		ch := channelOf(p)
		waitFor(t, ch+" to see every row", func() bool { return rec.distinct(ch) == before+after })
		checkSeq(t, ch+" (first deliveries)", firsts(rec.of(ch)), upTo(before+after))
		checkReplays(t, ch, rec.of(ch))
	}
	waitFor(t, "the table to be empty", func() bool { return tb.Count(t) == 0 })
}

// checkReplays fails unless every number of seq that is not one more than
// the highest before it starts a replay of rows already seen: rows come
// again only as whole runs, in order.
func checkReplays(t *testing.T, what string, seq []int) {
	t.Helper()
	top := -1
	for i, n := range seq {
		switch {
		case n == top+1:
			top = n
		case n <= top && (i == 0 || n == seq[i-1]+1 || n < seq[i-1]):
			// a replay starts (n < previous) or goes on (n = previous+1)
		default:
			t.Fatalf("%s: %d after %d at %d (highest %d): out of order", what, n, seq[i-1], i, top)
		}
	}
}

// TestSharedPartitions: two servers consume one table: each row runs
// once, and the rows each server runs of a partition come in order.
func TestSharedPartitions(t *testing.T) {
	t.Parallel()
	for _, try := range []bool{false, true} {
		t.Run("use_try_lock="+strconv.FormatBool(try), func(t *testing.T) {
			t.Parallel()
			const partitions, perPartition = 4, 1000
			tb := pgtest.NewTable(t, pgtest.DSN(t), partitions)
			pc := tb.Consumer()
			pc.UseTryLock = try
			pc.PartitionSelectLimit = 50
			pc.PartitionNotificationChannel = tb.Notify(t)
			var recs []*recorder
			for range 2 {
				s := startServer(t, consumerOf(tb.Name, pc))
				recs = append(recs, record(t, s.Node(), "p0", "p1", "p2", "p3"))
			}
			for p := range partitions {
				tb.Insert(t, publishRows(p, 0, perPartition)...)
			}
			for p := range partitions {
				ch := channelOf(p)
				waitFor(t, ch+" to see every row", func() bool {
					return len(recs[0].of(ch))+len(recs[1].of(ch)) >= perPartition
				})
				a, b := recs[0].of(ch), recs[1].of(ch)
				checkAscending(t, ch+" on the first server", a)
				checkAscending(t, ch+" on the second server", b)
				if seen := len(firsts(append(a, b...))); seen != perPartition || len(a)+len(b) != perPartition {
					t.Fatalf("%s: %d + %d deliveries of %d distinct rows, want %d once each", ch, len(a), len(b), seen, perPartition)
				}
			}
		})
	}
}

func checkAscending(t *testing.T, what string, seq []int) {
	t.Helper()
	for i := 1; i < len(seq); i++ {
		if seq[i] <= seq[i-1] {
			t.Fatalf("%s: %d after %d at %d", what, seq[i], seq[i-1], i)
		}
	}
}

// TestShutdownMidStream: a consumer stopped while it works through a
// backlog finishes its rounds and deletes what it ran: the rows gone from
// the table are exactly those published, each once. Another consumer then
// runs the rest, in order after them.
func TestShutdownMidStream(t *testing.T) {
	t.Parallel()
	const partitions, perPartition = 4, 2000
	tb := pgtest.NewTable(t, pgtest.DSN(t), partitions)
	for p := range partitions {
		tb.Insert(t, publishRows(p, 0, perPartition)...)
	}
	first := startBare(t, tb.Name, tb.Consumer(), nil)
	rec := record(t, first.node, "p0", "p1", "p2", "p3")
	waitFor(t, "rows to flow", func() bool { return len(rec.of("p0")) > 300 })
	first.stop(t)
	left := remaining(t, tb, partitions)
	for p := range partitions {
		ch := channelOf(p)
		// Every row the consumer deleted was published: wait until the
		// node has delivered them all.
		ran := perPartition - len(left[p])
		waitFor(t, fmt.Sprintf("%s to see the %d rows run", ch, ran), func() bool { return len(rec.of(ch)) >= ran })
		checkSeq(t, ch+" before the stop", rec.of(ch), upTo(ran))
		checkSeq(t, ch+" left in the table", left[p], upTo(perPartition)[ran:])
	}

	second := startBare(t, tb.Name, tb.Consumer(), nil)
	rec2 := record(t, second.node, "p0", "p1", "p2", "p3")
	for p := range partitions {
		ch := channelOf(p)
		waitFor(t, ch+" to see the rest", func() bool { return len(rec2.of(ch)) >= len(left[p]) })
		checkSeq(t, ch+" after the stop", rec2.of(ch), left[p])
	}
}

// remaining returns the numbers n of the rows left in each partition, in
// id order.
func remaining(t *testing.T, tb *pgtest.Table, partitions int) [][]int {
	t.Helper()
	rows, err := tb.Pool().Query(context.Background(), "SELECT partition, (payload->'data'->>'n')::int FROM "+tb.Name+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	left := make([][]int, partitions)
	for rows.Next() {
		var p, n int
		if err := rows.Scan(&p, &n); err != nil {
			t.Fatal(err)
		}
		left[p] = append(left[p], n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return left
}

// TestNew: what New refuses.
func TestNew(t *testing.T) {
	t.Parallel()
	good := config.PostgresConsumer{DSN: "postgres://u@127.0.0.1:1/db", OutboxTableName: "public.outbox", NumPartitions: 1, PartitionSelectLimit: 1, PartitionPollInterval: time.Second}
	d := consume.NewDispatcher("n", "postgresql", nil, nil)
	if _, err := pgoutbox.New(good, nil, d); err != nil {
		t.Fatalf("New: %v", err)
	}
	for name, change := range map[string]func(*config.PostgresConsumer){
		"table name":    func(c *config.PostgresConsumer) { c.OutboxTableName = "outbox; DROP TABLE x" },
		"partitions":    func(c *config.PostgresConsumer) { c.NumPartitions = 0 },
		"select limit":  func(c *config.PostgresConsumer) { c.PartitionSelectLimit = 0 },
		"poll interval": func(c *config.PostgresConsumer) { c.PartitionPollInterval = 0 },
		"dsn":           func(c *config.PostgresConsumer) { c.DSN = "postgres://u@127.0.0.1:notaport/db" },
		"listen dsn": func(c *config.PostgresConsumer) {
			c.PartitionNotificationChannel, c.PartitionNotificationDSN = "ch", "postgres://u@127.0.0.1:notaport/db"
		},
	} {
		c := good
		change(&c)
		if _, err := pgoutbox.New(c, nil, d); err == nil {
			t.Errorf("%s: New accepted %+v", name, c)
		}
	}
}
