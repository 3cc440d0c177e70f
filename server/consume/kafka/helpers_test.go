package kafka_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gyrehq/gyre/server"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/consumetest"
)

// ns is the namespace of the tests' channels: with history, so that what
// a consumer published can be read back in order.
const ns = "kt"

var seq atomic.Int64

func unique(what string) string { return what + strconv.FormatInt(seq.Add(1), 10) }

// node is a running Gyre server (memory engine) with consumers.
type node struct {
	t       testing.TB
	s       *server.Server
	stopped sync.Once
}

// testLogger logs to the test's output with GYRE_TEST_LOG=1 (debug with
// GYRE_TEST_LOG=debug), else nowhere.
func testLogger() *slog.Logger {
	switch os.Getenv("GYRE_TEST_LOG") {
	case "1":
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	case "debug":
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func startNode(t testing.TB, cs ...config.Consumer) *node {
	t.Helper()
	return startNodeWith(t, nil, cs...)
}

// startNodeWith is startNode with the config changed by change.
func startNodeWith(t testing.TB, change func(*config.Config), cs ...config.Consumer) *node {
	t.Helper()
	c := config.Default()
	c.HTTPServer.Address = "127.0.0.1"
	c.HTTPServer.Port = 0
	c.HTTPAPI.Insecure = true
	c.Channel.Namespaces = []config.Namespace{{Name: ns, ChannelOptions: config.ChannelOptions{
		HistorySize: 200_000, HistoryTTL: 10 * time.Minute,
	}}}
	c.Consumers = cs
	if change != nil {
		change(c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	return startNodeConfig(t, c)
}

// startNodeConfig runs a server of config c until the test ends.
func startNodeConfig(t testing.TB, c *config.Config) *node {
	t.Helper()
	s, err := server.New(c, testLogger())
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	n := &node{t: t, s: s}
	t.Cleanup(n.stop)
	return n
}

// stop shuts the server down, once.
func (n *node) stop() {
	n.stopped.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.s.Shutdown(ctx); err != nil {
			n.t.Errorf("shutdown: %v", err)
		}
	})
}

// stats is the state of the node's only consumer.
func (n *node) stats() consume.Snapshot {
	snaps := n.s.Consumers()
	if len(snaps) != 1 {
		n.t.Fatalf("the node runs %d consumers, want 1", len(snaps))
	}
	return snaps[0]
}

// history is the data of the channel's publications, oldest first.
func (n *node) history(channel string) []string {
	n.t.Helper()
	pubs, _, err := n.s.Node().History(channel, -1, nil, false)
	if err != nil {
		n.t.Fatalf("history of %s: %v", channel, err)
	}
	out := make([]string, len(pubs))
	for i, p := range pubs {
		out[i] = string(p.Data)
	}
	return out
}

// waitHistory waits until the channel's history holds want exactly.
func (n *node) waitHistory(channel string, want []string) {
	n.t.Helper()
	var got []string
	waitFor(n.t, "history of "+channel, func() bool {
		got = n.history(channel)
		return len(got) >= len(want)
	})
	if d := consumetest.Diff(got, want); d != "" {
		n.t.Fatalf("history of %s: %s", channel, d)
	}
}

// waitFor polls cond until it holds, failing after two minutes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within two minutes", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// data and want are the suite's: {"n":i} and a run of them.
var (
	data = consumetest.Data
	want = consumetest.Want
)

// publishes are records publishing data(from..to-1) into channel, into
// partition p of topic, with the method in a header, each with an
// idempotency key made of key and its number.
func publishes(topic string, p int32, channel, key string, from, to int) []*kgo.Record {
	recs := make([]*kgo.Record, 0, to-from)
	for i := from; i < to; i++ {
		req := map[string]any{"channel": channel, "data": json.RawMessage(data(i))}
		if key != "" {
			req["idempotency_key"] = key + "-" + strconv.Itoa(i)
		}
		payload, _ := json.Marshal(req)
		recs = append(recs, &kgo.Record{
			Topic: topic, Partition: p, Value: payload,
			Headers: []kgo.RecordHeader{{Key: "centrifugo-method", Value: []byte("publish")}},
		})
	}
	return recs
}
