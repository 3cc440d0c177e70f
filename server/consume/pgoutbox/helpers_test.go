package pgoutbox_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/pgoutbox"
	"github.com/gyrehq/gyre/server/consume/pgoutbox/pgtest"
	"github.com/gyrehq/gyre/token"
)

// TestMain is the shared suite's: it stops the Redis and NATS servers the
// suite starts. The PostgreSQL server of pgtest.DSN dies with the test
// binary.
func TestMain(m *testing.M) { consumetest.Main(m, pgtest.Stop) }

const testSecret = "pgoutbox-test-secret"

// waitLimit bounds every wait for something the consumer should do.
const waitLimit = 60 * time.Second

// logger is where the nodes log: nowhere, unless GYRE_TEST_LOG=1.
func logger() *slog.Logger {
	if os.Getenv("GYRE_TEST_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// consumerOf is the consumers[] entry of a postgresql consumer. Tests name
// it after its table: the advisory locks of partitions are named after the
// consumer, and tests that share a server must not share locks.
func consumerOf(name string, pc config.PostgresConsumer) config.Consumer {
	return pgtest.Entry(name, pc)
}

// startServer runs a Gyre server with the consumers, on a free port; it is
// shut down when the test ends.
func startServer(t *testing.T, consumers ...config.Consumer) *server.Server {
	t.Helper()
	c := config.Default()
	c.Client.Token.HMACSecretKey = testSecret
	c.Channel.WithoutNamespace.AllowSubscribeForClient = true
	c.Channel.Namespaces = []config.Namespace{{Name: "hist", ChannelOptions: config.ChannelOptions{HistorySize: 100, HistoryTTL: time.Minute}}}
	c.HTTPServer.Address = "127.0.0.1"
	c.HTTPServer.Port = 0
	c.Consumers = consumers
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := server.New(c, logger())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s
}

// bare is a node with one consumer and nothing else, for tests that read
// the consumer's counters or stop it alone.
type bare struct {
	node *gyre.Node
	set  *consume.Set
}

// startBare runs a node and the consumer of pc on it, set up with setup
// (nil: nothing) before it starts. The consumer is stopped, if it still
// runs, and the node shut down when the test ends.
func startBare(t testing.TB, name string, pc config.PostgresConsumer, setup func(consume.Consumer)) *bare {
	t.Helper()
	b := newBare(t, name, pc, setup)
	b.set.Start()
	return b
}

// startBareTLS is startBare for a consumer connecting with tlsCfg.
func startBareTLS(t testing.TB, name string, pc config.PostgresConsumer, tlsCfg *tls.Config) *bare {
	t.Helper()
	b := newBareTLS(t, name, pc, nil, tlsCfg)
	b.set.Start()
	return b
}

// newBare is startBare without the start: set.Start starts the consumer.
func newBare(t testing.TB, name string, pc config.PostgresConsumer, setup func(consume.Consumer)) *bare {
	t.Helper()
	return newBareTLS(t, name, pc, setup, nil)
}

func newBareTLS(t testing.TB, name string, pc config.PostgresConsumer, setup func(consume.Consumer), tlsCfg *tls.Config) *bare {
	t.Helper()
	log := logger()
	n, err := gyre.NewNode(gyre.Config{
		Token:    token.Config{HMACSecretKey: testSecret},
		Channels: gyre.ChannelConfig{WithoutNamespace: gyre.ChannelOptions{AllowSubscribeForClient: true}},
		Logger:   log,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	d := consume.NewDispatcher(name, "postgresql", api.NewExecutor(n, api.Config{Logger: log}), log)
	c, err := pgoutbox.New(pc, tlsCfg, d)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(c)
	}
	b := &bare{node: n, set: &consume.Set{}}
	b.set.Add(d, c)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := b.set.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		_ = n.Shutdown(ctx)
	})
	return b
}

// stats is the consumer's state.
func (b *bare) stats() consume.Snapshot { return b.set.Snapshots()[0] }

// stop stops the consumer and waits until it has finished its rounds.
func (b *bare) stop(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.set.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// recorder keeps the numbers n of the publications {"n": n} of channels,
// in the order they came.
type recorder struct {
	mu   sync.Mutex
	seen map[string][]int
}

// record tails channels on node until the test ends.
func record(t testing.TB, node *gyre.Node, channels ...string) *recorder {
	t.Helper()
	r := &recorder{seen: map[string][]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, ch := range channels {
		_, err := node.Tail(ctx, ch, func(channel string, pub *gyre.Publication) {
			var v struct{ N int }
			if err := json.Unmarshal(pub.Data, &v); err != nil {
				v.N = -1
			}
			r.mu.Lock()
			r.seen[channel] = append(r.seen[channel], v.N)
			r.mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// of returns the numbers seen on channel so far.
func (r *recorder) of(channel string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen[channel])
}

// distinct is how many different numbers channel has seen.
func (r *recorder) distinct(channel string) int {
	return len(firsts(r.of(channel)))
}

// firsts is seq without the numbers seen before: what a subscriber that
// drops repeats sees.
func firsts(seq []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, n := range seq {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// waitFor waits until cond holds, failing the test after waitLimit.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", waitLimit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// publishRows are count rows of partition p publishing {"n": from...} to
// channel "p<p>".
func publishRows(p, from, count int) []pgtest.Row {
	rows := make([]pgtest.Row, count)
	for i := range rows {
		rows[i] = pgtest.Row{Partition: p, Method: "publish", Payload: publishPayload(channelOf(p), from+i)}
	}
	return rows
}

func publishPayload(channel string, n int) []byte {
	return fmt.Appendf(nil, `{"channel":%q,"data":{"n":%d}}`, channel, n)
}

func channelOf(p int) string { return "p" + strconv.Itoa(p) }

// upTo is 0, 1, ..., n-1.
func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// checkSeq fails unless got is want.
func checkSeq(t *testing.T, what string, got, want []int) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %d numbers %v, want %d numbers %v", what, len(got), clip(got), len(want), clip(want))
	}
}

func clip(s []int) []int {
	if len(s) > 20 {
		return s[:20]
	}
	return s
}
