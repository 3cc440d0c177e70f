package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/memory"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/jetstream"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	// Short, so that what a lost acknowledgement brings back comes
	// within the tests, and that batches waiting for a broker are told
	// in progress.
	jetstream.SetAckWait(3 * time.Second)
	consumetest.Main(m)
}

// pub is one publication that reached the broker.
type pub struct {
	Channel string
	Data    string
	Opts    broker.PublishOptions
}

// recBroker is the memory broker recording what is published through it,
// and failing every publish while down is set, as a broker out of reach
// does. It hides the memory broker's direct path, so that every publish
// goes through PublishMany.
type recBroker struct {
	broker.Broker
	down atomic.Bool
	// onDown, when set, is called (once) at the first publish refused.
	onDown func()
	once   sync.Once

	mu         sync.Mutex
	pubs       []pub
	suppressed []pub
}

func (b *recBroker) Publish(channel string, data []byte, opts broker.PublishOptions) (broker.StreamPosition, bool, error) {
	items := []broker.PublishItem{{Channel: channel, Data: data, Opts: opts}}
	b.PublishMany(items)
	return items[0].Position, items[0].Suppressed, items[0].Err
}

func (b *recBroker) PublishMany(items []broker.PublishItem) {
	if b.down.Load() {
		if b.onDown != nil {
			b.once.Do(b.onDown)
		}
		for i := range items {
			items[i].Err = errors.New("broker down")
		}
		return
	}
	b.Broker.PublishMany(items)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, it := range items {
		p := pub{Channel: it.Channel, Data: string(it.Data), Opts: it.Opts}
		switch {
		case it.Err != nil:
		case it.Suppressed:
			b.suppressed = append(b.suppressed, p)
		default:
			b.pubs = append(b.pubs, p)
		}
	}
}

// published is what was published into channel, in order.
func (b *recBroker) published(channel string) []pub {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []pub
	for _, p := range b.pubs {
		if p.Channel == channel {
			out = append(out, p)
		}
	}
	return out
}

func (b *recBroker) suppressedCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.suppressed)
}

// testNode is a Gyre node with history on every channel, whose API
// executor runs what consumers read.
type testNode struct {
	node *gyre.Node
	exec *api.Executor
	rec  *recBroker
}

func newTestNode(t testing.TB) *testNode {
	t.Helper()
	n, err := buildNode(testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.node.Shutdown(ctx)
	})
	return n
}

// newChildNode is the node of a child process, which is killed.
func newChildNode() (*testNode, error) { return buildNode(nil) }

func buildNode(log *slog.Logger) (*testNode, error) {
	mb, err := memory.NewBroker(memory.Config{})
	if err != nil {
		return nil, err
	}
	rec := &recBroker{Broker: mb}
	n, err := gyre.NewNode(gyre.Config{
		Broker: rec, Logger: log,
		// Delta allowed: a publication's delta flag reaches the broker
		// only where a subscriber could take a delta.
		Channels: gyre.ChannelConfig{WithoutNamespace: gyre.ChannelOptions{HistorySize: 100_000, HistoryTTL: time.Hour, AllowedDeltaTypes: []string{"fossil"}}},
	})
	if err != nil {
		return nil, err
	}
	if err := n.Run(); err != nil {
		return nil, err
	}
	return &testNode{node: n, exec: api.NewExecutor(n, api.Config{}), rec: rec}, nil
}

// running is a consumer started on a test node.
type running struct {
	d    *consume.Dispatcher
	set  *consume.Set
	stop func()
}

// start runs consumer c on the node until stop or the end of the test.
func (n *testNode) start(t testing.TB, c config.Consumer) *running {
	t.Helper()
	d := consume.NewDispatcher(c.Name, c.Type, n.exec, testLogger(t))
	cons, err := jetstream.New(c.NatsJetStream, nil, d)
	if err != nil {
		t.Fatal(err)
	}
	set := &consume.Set{}
	set.Add(d, cons)
	set.Start()
	var once sync.Once
	r := &running{d: d, set: set}
	r.stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := set.Stop(ctx); err != nil {
				t.Errorf("stop consumer %s: %v", c.Name, err)
			}
		})
	}
	t.Cleanup(r.stop)
	return r
}

func (r *running) snapshot() consume.Snapshot { return r.set.Snapshots()[0] }

// testLogger logs into the test's output at warning level and above (the
// info level with -v).
func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}

// waitFor polls cond until it holds, failing t after a minute (a bound for
// a broken test, not a timing expectation).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// publishMsgs are n publish commands into channel with the method header,
// data {"n": i} for i from first.
func publishMsgs(channel string, first, n int) []consumetest.Msg {
	out := make([]consumetest.Msg, n)
	for i := range out {
		out[i] = consumetest.Msg{
			Method:  "publish",
			Payload: fmt.Appendf(nil, `{"channel":%q,"data":{"n":%d}}`, channel, first+i),
		}
	}
	return out
}

// checkOrder fails t unless pubs are {"n": 0} to {"n": want-1} in order.
func checkOrder(t testing.TB, pubs []pub, want int) {
	t.Helper()
	if len(pubs) != want {
		t.Fatalf("%d publications, want %d", len(pubs), want)
	}
	for i, p := range pubs {
		if w := fmt.Sprintf(`{"n":%d}`, i); p.Data != w {
			t.Fatalf("publication %d is %s, want %s", i, p.Data, w)
		}
	}
}
