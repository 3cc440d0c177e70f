package redisstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/redisstream"
)

func TestMain(m *testing.M) { consumetest.Main(m) }

// waitFor bounds every wait of these tests: a guard against hanging, not
// a measure.
const waitFor = 60 * time.Second

// newNode runs a Gyre node on the memory broker whose channels keep a
// long history, and returns it with its API executor.
func newNode(t testing.TB) (*gyre.Node, *api.Executor) {
	t.Helper()
	n, err := gyre.NewNode(gyre.Config{Channels: gyre.ChannelConfig{
		WithoutNamespace: gyre.ChannelOptions{HistorySize: 1_000_000, HistoryTTL: time.Hour},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Shutdown(context.Background()) })
	return n, api.NewExecutor(n, api.Config{})
}

// running is a consumer started as the server starts one.
type running struct {
	set *consume.Set
	d   *consume.Dispatcher
}

// start runs consumer c on the node of exec until the test ends (or
// stop).
func start(t testing.TB, exec *api.Executor, c config.Consumer) *running {
	t.Helper()
	var log *slog.Logger
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	d := consume.NewDispatcher(c.Name, c.Type, exec, log)
	cons, err := redisstream.New(c.RedisStream, redisConfig(c.RedisStream.Redis), d)
	if err != nil {
		t.Fatal(err)
	}
	r := &running{set: &consume.Set{}, d: d}
	r.set.Add(d, cons)
	r.set.Start()
	t.Cleanup(r.stop)
	return r
}

// testLog writes log lines into the test's log.
type testLog struct{ t testing.TB }

func (w testLog) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// stop stops the consumer and waits until it returned.
func (r *running) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := r.set.Stop(ctx); err != nil {
		panic(err)
	}
}

func (r *running) snapshot() consume.Snapshot { return r.set.Snapshots()[0] }

// redisConfig is the broker/redis configuration of r, as the server
// makes it.
func redisConfig(r config.Redis) redis.Config {
	return redis.Config{
		Addresses: r.Address, ClusterAddresses: r.ClusterAddress,
		SentinelAddresses: r.SentinelAddress, SentinelMasterName: r.SentinelMasterName,
		User: r.User, Password: r.Password, DB: r.DB,
		ConnectTimeout: r.ConnectTimeout, IOTimeout: r.IOTimeout,
	}
}

// publishMsg is an entry publishing {"n": n} into channel ch, with the
// method in its own field.
func publishMsg(ch string, n int) consumetest.Msg {
	return consumetest.Msg{Method: "publish", Payload: fmt.Appendf(nil, `{"channel":%q,"data":{"n":%d}}`, ch, n)}
}

// publishes are the entries publishing {"n": from} to {"n": to-1} into ch.
func publishes(ch string, from, to int) []consumetest.Msg {
	msgs := make([]consumetest.Msg, 0, to-from)
	for i := from; i < to; i++ {
		msgs = append(msgs, publishMsg(ch, i))
	}
	return msgs
}

// waitHistory waits until channel ch of n holds want publications, and
// returns them, oldest first.
func waitHistory(t testing.TB, n *gyre.Node, ch string, want int) []*gyre.Publication {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		pubs, _, err := n.History(ch, -1, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(pubs) >= want {
			return pubs
		}
		if time.Now().After(deadline) {
			t.Fatalf("channel %s: %d publications, want %d", ch, len(pubs), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// numbers are the n of the publications {"n": n}.
func numbers(t testing.TB, pubs []*gyre.Publication) []int {
	t.Helper()
	out := make([]int, len(pubs))
	for i, p := range pubs {
		var d struct{ N int }
		if err := json.Unmarshal(p.Data, &d); err != nil {
			t.Fatalf("publication %d: %q: %v", i, p.Data, err)
		}
		out[i] = d.N
	}
	return out
}

// wantSequence fails t unless got is from, from+1, ... to-1.
func wantSequence(t testing.TB, got []int, from, to int) {
	t.Helper()
	want := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		want = append(want, i)
	}
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("got %d numbers, want %d; first difference at %d: %d, want %d", len(got), len(want), i, got[i], want[i])
			}
		}
		t.Fatalf("got %d numbers, want %d", len(got), len(want))
	}
}

// eventually waits until cond holds.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pending is the number of entries of the group on key not acknowledged.
func pending(t testing.TB, c rueidis.Client, key, group string) int64 {
	t.Helper()
	r, err := c.Do(context.Background(), c.B().Xpending().Key(key).Group(group).Build()).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	n, err := r[0].AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// makeGroup makes group on key at its start, if missing, so that entries
// added before the consumer starts are read (a consumer makes it at the
// end).
func makeGroup(t testing.TB, c rueidis.Client, key, group string) {
	t.Helper()
	err := c.Do(context.Background(), c.B().XgroupCreate().Key(key).Group(group).Id("0").Mkstream().Build()).Error()
	if err != nil && !rueidis.IsRedisBusyGroup(err) {
		t.Fatal(err)
	}
}

// history is every publication of channel ch of n, oldest first.
func history(t testing.TB, n *gyre.Node, ch string) []*gyre.Publication {
	t.Helper()
	pubs, _, err := n.History(ch, -1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return pubs
}

// field is the value of field name of the entry of stream key with the
// given ID, "" when missing.
func groupInfo(t testing.TB, c rueidis.Client, key, group string) map[string]rueidis.RedisMessage {
	t.Helper()
	groups, err := c.Do(context.Background(), c.B().XinfoGroups().Key(key).Build()).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		m, err := g.AsMap()
		if err != nil {
			t.Fatal(err)
		}
		if name := m["name"]; name.String() != "" {
			if s, _ := name.ToString(); s == group {
				return m
			}
		}
	}
	return nil
}
