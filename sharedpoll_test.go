package gyre_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/internal/controlpb"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// pollBackend is a backend's data behind a node's shared-poll refresh
// handler: values by key, and a record of what each node asked.
type pollBackend struct {
	mu      sync.Mutex
	values  map[string]gyre.SharedPollItem
	epoch   string
	failing bool
	calls   int
	// asked counts, per node name, how many times each key was polled.
	asked map[string]map[string]int
}

func newPollBackend() *pollBackend {
	return &pollBackend{values: map[string]gyre.SharedPollItem{}, asked: map[string]map[string]int{}}
}

func (b *pollBackend) set(key, data string, version uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.values[key] = gyre.SharedPollItem{Key: key, Data: []byte(data), Version: version}
}

func (b *pollBackend) remove(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.values[key] = gyre.SharedPollItem{Key: key, Removed: true}
}

func (b *pollBackend) setFailing(f bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failing = f
}

// handler is the refresh handler of the node called name.
func (b *pollBackend) handler(name string) gyre.SharedPollRefreshHandler {
	return func(_ context.Context, e gyre.SharedPollRefreshEvent) (gyre.SharedPollRefreshReply, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.calls++
		if b.asked[name] == nil {
			b.asked[name] = map[string]int{}
		}
		for _, it := range e.Items {
			b.asked[name][it.Key]++
		}
		if b.failing {
			return gyre.SharedPollRefreshReply{}, errors.New("backend down")
		}
		var rep gyre.SharedPollRefreshReply
		rep.Epoch = b.epoch
		for _, it := range e.Items {
			if v, ok := b.values[it.Key]; ok {
				rep.Items = append(rep.Items, v)
			}
		}
		return rep, nil
	}
}

// pollers returns, per key, the nodes that polled it since the last
// reset.
func (b *pollBackend) pollers() map[string][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string][]string{}
	for node, keys := range b.asked {
		for k := range keys {
			out[k] = append(out[k], node)
		}
	}
	for _, nodes := range out {
		sort.Strings(nodes)
	}
	return out
}

func (b *pollBackend) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = map[string]map[string]int{}
	b.calls = 0
}

func (b *pollBackend) callCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

// trackAll allows every signature but "bad" (103) and "expired" (109);
// "short" expires in a second.
func trackAll(_ context.Context, _ *gyre.Client, e gyre.TrackEvent) (gyre.TrackReply, error) {
	rep := gyre.TrackReply{ExpireAt: make([]int64, len(e.Batches))}
	for i, b := range e.Batches {
		switch b.Signature {
		case "bad":
			return gyre.TrackReply{}, gyre.ErrorPermissionDenied
		case "expired":
			return gyre.TrackReply{}, gyre.ErrorTokenExpired
		case "short":
			rep.ExpireAt[i] = time.Now().Add(time.Second).Unix()
		case "hour":
			rep.ExpireAt[i] = time.Now().Add(time.Hour).Unix()
		}
	}
	return rep, nil
}

func sharedPollConfig() gyre.Config {
	poll := gyre.ChannelOptions{
		AllowSubscribeForClient: true,
		SubscriptionType:        gyre.SubscriptionTypeSharedPoll,
		SharedPoll: gyre.SharedPollOptions{
			Versioned: true, RefreshInterval: 50 * time.Millisecond, RefreshBatchSize: 7,
			MaxKeysPerConnection: 20, PublishEnabled: true, ShutdownDelay: -1,
		},
	}
	vl := poll
	vl.SharedPoll.Versioned, vl.SharedPoll.PublishEnabled = false, false
	stream := gyre.ChannelOptions{AllowSubscribeForClient: true}
	return gyre.Config{Channels: gyre.ChannelConfig{Namespaces: []gyre.Namespace{
		{Name: "poll", ChannelOptions: poll},
		{Name: "pollvl", ChannelOptions: vl},
		{Name: "plain", ChannelOptions: stream},
	}}}
}

func pollNode(t *testing.T, cfg gyre.Config, b *pollBackend, name string) (*gyre.Node, string) {
	t.Helper()
	return newTestNodeWith(t, cfg, func(n *gyre.Node) {
		n.OnSharedPollRefresh(b.handler(name))
		n.OnTrack(trackAll)
	})
}

func pollSubscribe(t *testing.T, cl *testClient, channel string) *protocol.SubscribeResult {
	t.Helper()
	rep := cl.Subscribe(&protocol.SubscribeRequest{Channel: channel, Type: 4})
	if rep.Error != nil {
		t.Fatalf("subscribe %s: %v", channel, rep.Error)
	}
	if rep.Subscribe.Type != 4 {
		t.Fatalf("subscribe %s: result type %d, want 4", channel, rep.Subscribe.Type)
	}
	return rep.Subscribe
}

func track(cl *testClient, channel, sig string, keys []string, versions ...uint64) *protocol.Reply {
	b := &protocol.TrackBatch{Signature: sig}
	for i, k := range keys {
		it := &protocol.KeyedItem{Key: k}
		if i < len(versions) {
			it.Version = versions[i]
		}
		b.Items = append(b.Items, it)
	}
	return cl.Call(&protocol.Command{SubRefresh: &protocol.SubRefreshRequest{Channel: channel, Type: 1, Track: []*protocol.TrackBatch{b}}})
}

func mustTrack(t *testing.T, cl *testClient, channel, sig string, keys []string, versions ...uint64) *protocol.SubRefreshResult {
	t.Helper()
	rep := track(cl, channel, sig, keys, versions...)
	if rep.Error != nil {
		t.Fatalf("track %v in %s: %v", keys, channel, rep.Error)
	}
	return rep.SubRefresh
}

func untrack(cl *testClient, channel string, keys ...string) *protocol.Reply {
	return cl.Call(&protocol.Command{SubRefresh: &protocol.SubRefreshRequest{Channel: channel, Type: 2, Untrack: keys}})
}

// keyPubs returns the publications of key that the client got in pushes.
func keyPubs(cl *testClient, channel, key string) []*protocol.Publication {
	var out []*protocol.Publication
	for _, p := range cl.Pubs(channel) {
		if p.Key == key {
			out = append(out, p)
		}
	}
	return out
}

func waitKey(t *testing.T, cl *testClient, channel, key string, cond func(*protocol.Publication) bool) *protocol.Publication {
	t.Helper()
	var got *protocol.Publication
	cl.WaitFor(fmt.Sprintf("a push of %s in %s", key, channel), func() bool {
		for _, p := range keyPubs(cl, channel, key) {
			if cond(p) {
				got = p
				return true
			}
		}
		return false
	})
	return got
}

// TestSharedPoll: what a client of one node sees, on every engine and in
// both protocols: values pushed as they change (and only then), removals,
// untrack, a late tracker given the current value in its track reply,
// versionless numbering, and the refusals.
func TestSharedPoll(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, e enginetest.Engine) {
		for _, proto := range []protocol.Type{protocol.TypeJSON, protocol.TypeProtobuf} {
			t.Run(proto.String(), func(t *testing.T) {
				b := newPollBackend()
				b.set("a", `{"v":1}`, 1)
				b.set("b", `{"v":1}`, 1)
				n, url := pollNode(t, e.Config(t, sharedPollConfig()), b, "A")
				cl := dial(t, url, proto)
				cl.connect(connToken(t, "42", 0, nil))
				res := pollSubscribe(t, cl, "poll:x")
				if res.Epoch != "" {
					t.Fatalf("versioned channel's epoch %q before any poll, want empty", res.Epoch)
				}
				mustTrack(t, cl, "poll:x", "ok", []string{"a", "b"})
				waitKey(t, cl, "poll:x", "a", func(p *protocol.Publication) bool { return p.Version == 1 && string(p.Data) == `{"v":1}` })
				waitKey(t, cl, "poll:x", "b", func(p *protocol.Publication) bool { return p.Version == 1 })

				b.set("a", `{"v":2}`, 2)
				waitKey(t, cl, "poll:x", "a", func(p *protocol.Publication) bool { return p.Version == 2 && string(p.Data) == `{"v":2}` })
				// A version that does not grow is no change.
				b.set("a", `{"v":"same version"}`, 2)
				b.set("b", `{"v":3}`, 3)
				waitKey(t, cl, "poll:x", "b", func(p *protocol.Publication) bool { return p.Version == 3 })
				for _, p := range keyPubs(cl, "poll:x", "a") {
					if string(p.Data) == `{"v":"same version"}` {
						t.Fatal("a value whose version did not grow was pushed")
					}
				}

				// A second client tracking late gets the current value at
				// once (before its track reply); one that has it gets
				// nothing.
				late := dial(t, url, proto)
				late.connect(connToken(t, "43", 0, nil))
				pollSubscribe(t, late, "poll:x")
				mustTrack(t, late, "poll:x", "ok", []string{"a", "b"}, 0, 3)
				if got := late.Pubs("poll:x"); len(got) != 1 || got[0].Key != "a" || got[0].Version != 2 {
					t.Fatalf("late tracker got %v before its track reply, want a at version 2 only", got)
				}

				// Untracked keys are no longer pushed; removals are.
				if rep := untrack(late, "poll:x", "a"); rep.Error != nil {
					t.Fatalf("untrack: %v", rep.Error)
				}
				b.set("a", `{"v":4}`, 4)
				waitKey(t, cl, "poll:x", "a", func(p *protocol.Publication) bool { return p.Version == 4 })
				b.remove("b")
				waitKey(t, cl, "poll:x", "b", func(p *protocol.Publication) bool { return p.Removed })
				waitKey(t, late, "poll:x", "b", func(p *protocol.Publication) bool { return p.Removed })
				if n := len(keyPubs(late, "poll:x", "a")); n != 1 {
					t.Fatalf("key a pushed %d times to the late client, want once: it untracked a after the first", n)
				}

				// Versionless: the node numbers changes, above zero, under
				// an epoch of 8 letters that every node gives the channel.
				vres := pollSubscribe(t, cl, "pollvl:y")
				if len(vres.Epoch) != 8 {
					t.Fatalf("versionless epoch %q, want 8 characters", vres.Epoch)
				}
				b.set("c", `"one"`, 0)
				mustTrack(t, cl, "pollvl:y", "ok", []string{"c"})
				first := waitKey(t, cl, "pollvl:y", "c", func(p *protocol.Publication) bool { return string(p.Data) == `"one"` })
				if first.Version == 0 {
					t.Fatal("versionless value pushed without a version")
				}
				b.set("c", `"two"`, 0)
				second := waitKey(t, cl, "pollvl:y", "c", func(p *protocol.Publication) bool { return string(p.Data) == `"two"` })
				if second.Version <= first.Version {
					t.Fatalf("versionless versions %d then %d, want growing", first.Version, second.Version)
				}
				time.Sleep(200 * time.Millisecond) // polls of the same value
				if n := len(keyPubs(cl, "pollvl:y", "c")); n != 2 {
					t.Fatalf("%d pushes of c, want 2: an unchanged versionless value was pushed again", n)
				}

				// Refusals.
				checkCode := func(what string, rep *protocol.Reply, code uint32) {
					t.Helper()
					if rep.Error == nil || rep.Error.Code != code {
						t.Fatalf("%s: reply %v, want error %d", what, rep, code)
					}
				}
				checkCode("bad signature", track(cl, "poll:x", "bad", []string{"z"}), 103)
				checkCode("expired signature", track(cl, "poll:x", "expired", []string{"z"}), 109)
				many := make([]string, 21)
				for i := range many {
					many[i] = "k" + strconv.Itoa(i)
				}
				checkCode("too many keys", track(cl, "poll:x", "ok", many), 106)
				checkCode("not subscribed", track(cl, "poll:other", "ok", []string{"a"}), 107)
				checkCode("empty track", cl.Call(&protocol.Command{SubRefresh: &protocol.SubRefreshRequest{Channel: "poll:x", Type: 1}}), 107)
				checkCode("stream subscribe to a shared-poll channel", cl.Subscribe(&protocol.SubscribeRequest{Channel: "poll:s"}), 107)
				checkCode("shared-poll subscribe to a stream channel", cl.Subscribe(&protocol.SubscribeRequest{Channel: "plain:s", Type: 4}), 107)
				cl.MustSubscribe("plain:t")
				checkCode("track on a stream subscription", track(cl, "plain:t", "ok", []string{"a"}), 107)
				checkCode("client publish into a shared-poll channel", cl.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "poll:x", Data: []byte(`{}`)}}), 107)
				if _, err := n.Publish("poll:x", []byte(`{}`)); !errors.Is(err, gyre.ErrorBadRequest) {
					t.Fatalf("Publish into a shared-poll channel: %v, want ErrorBadRequest", err)
				}
				if cl.Closed() != nil {
					t.Fatalf("refusals closed the connection: %v", cl.Closed())
				}
			})
		}
	})
}

// TestSharedPollOncePerCluster: three nodes whose clients all track the
// same keys poll each key from one node only, and every client gets every
// value, whichever node polled it; SharedPollPublish reaches them all.
func TestSharedPollOncePerCluster(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, e enginetest.Engine) {
		b := newPollBackend()
		keys := make([]string, 20)
		for i := range keys {
			keys[i] = "key" + strconv.Itoa(i)
			b.set(keys[i], `1`, 1)
		}
		names := []string{"A", "B", "C"}
		var nodes []*gyre.Node
		var clients []*testClient
		for _, name := range names {
			n, url := pollNode(t, e.Same(t, sharedPollConfig(), "c"), b, name)
			nodes = append(nodes, n)
			cl := dial(t, url, protocol.TypeJSON)
			cl.connect(connToken(t, name, 0, nil))
			clients = append(clients, cl)
		}
		waitNodes(t, nodes)
		for _, cl := range clients {
			pollSubscribe(t, cl, "poll:many")
			mustTrack(t, cl, "poll:many", "ok", keys)
		}
		for _, cl := range clients {
			for _, k := range keys {
				waitKey(t, cl, "poll:many", k, func(p *protocol.Publication) bool { return p.Version == 1 })
			}
		}
		b.reset()
		for _, k := range keys {
			b.set(k, `2`, 2)
		}
		for _, cl := range clients {
			for _, k := range keys {
				waitKey(t, cl, "poll:many", k, func(p *protocol.Publication) bool { return p.Version == 2 })
			}
		}
		byNode := map[string]int{}
		for k, polled := range b.pollers() {
			if len(polled) != 1 {
				t.Fatalf("key %s polled by nodes %v, want one", k, polled)
			}
			byNode[polled[0]]++
		}
		if len(byNode) < 2 {
			t.Fatalf("keys polled by %v: all on one node, want them spread", byNode)
		}

		if err := nodes[1].SharedPollPublish(context.Background(), "poll:many", gyre.SharedPollItem{Key: "key3", Data: []byte(`3`), Version: 3}, ""); err != nil {
			t.Fatal(err)
		}
		for _, cl := range clients {
			waitKey(t, cl, "poll:many", "key3", func(p *protocol.Publication) bool { return p.Version == 3 && string(p.Data) == "3" })
		}

		// A node that goes: its keys move to the others, and values
		// keep coming to the clients left.
		if err := nodes[2].Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			b.set(k, `4`, 4)
		}
		for _, cl := range clients[:2] {
			for _, k := range keys {
				waitKey(t, cl, "poll:many", k, func(p *protocol.Publication) bool { return p.Version == 4 })
			}
		}
	})
}

// TestSharedPollBackendDown: a failing backend is asked less and less
// often (no poll storm), and values come once it answers again.
func TestSharedPollBackendDown(t *testing.T) {
	b := newPollBackend()
	b.set("a", `1`, 1)
	_, url := pollNode(t, sharedPollConfig(), b, "A")
	cl := dial(t, url, protocol.TypeJSON)
	cl.connect(connToken(t, "42", 0, nil))
	pollSubscribe(t, cl, "poll:x")
	mustTrack(t, cl, "poll:x", "ok", []string{"a"})
	waitKey(t, cl, "poll:x", "a", func(p *protocol.Publication) bool { return p.Version == 1 })
	b.setFailing(true)
	b.reset()
	time.Sleep(3 * time.Second)
	// 50 ms cycles would call 60 times; the back-off doubles the wait
	// after each failure, up to 64 intervals.
	if calls := b.callCount(); calls > 20 {
		t.Fatalf("%d calls to a failing backend in 3 s of 50 ms cycles: no back-off", calls)
	}
	b.set("a", `2`, 2)
	b.setFailing(false)
	waitKey(t, cl, "poll:x", "a", func(p *protocol.Publication) bool { return p.Version == 2 })
}

// TestSharedPollEpoch: a versioned backend whose epoch changes starts its
// versions over; the trackers are told to subscribe again (2500).
func TestSharedPollEpoch(t *testing.T) {
	b := newPollBackend()
	b.epoch = "e1"
	b.set("a", `1`, 5)
	cfg := sharedPollConfig()
	// The channel's state (and epoch) outlives the resubscribe.
	cfg.Channels.Namespaces[0].SharedPoll.ShutdownDelay = 10 * time.Second
	_, url := pollNode(t, cfg, b, "A")
	cl := dial(t, url, protocol.TypeJSON)
	cl.connect(connToken(t, "42", 0, nil))
	unsubscribed := func(n int) {
		t.Helper()
		cl.WaitFor(fmt.Sprintf("unsubscribe %d", n), func() bool {
			var got []uint32
			for _, p := range cl.Pushes() {
				if p.Unsubscribe != nil {
					got = append(got, p.Unsubscribe.Code)
				}
			}
			if len(got) >= n && got[n-1] != 2500 {
				t.Fatalf("unsubscribe codes %v, want 2500", got)
			}
			return len(got) >= n
		})
	}
	// A client told no epoch (the node had not seen one yet) is not
	// given values of one: it could not tell when they start over. It
	// subscribes again and is told the epoch.
	if res := pollSubscribe(t, cl, "poll:x"); res.Epoch != "" {
		t.Fatalf("epoch before any poll %q, want empty", res.Epoch)
	}
	mustTrack(t, cl, "poll:x", "ok", []string{"a"})
	unsubscribed(1)
	if n := len(keyPubs(cl, "poll:x", "a")); n != 0 {
		t.Fatalf("%d values pushed to a client told no epoch", n)
	}
	if res := pollSubscribe(t, cl, "poll:x"); res.Epoch != "e1" {
		t.Fatalf("epoch %q, want e1", res.Epoch)
	}
	mustTrack(t, cl, "poll:x", "ok", []string{"a"})
	waitKey(t, cl, "poll:x", "a", func(p *protocol.Publication) bool { return p.Version == 5 })
	b.mu.Lock()
	b.epoch = "e2"
	b.values["a"] = gyre.SharedPollItem{Key: "a", Data: []byte(`2`), Version: 1}
	b.mu.Unlock()
	unsubscribed(2)
	res := pollSubscribe(t, cl, "poll:x")
	if res.Epoch != "e2" {
		t.Fatalf("epoch after the change %q, want e2", res.Epoch)
	}
	mustTrack(t, cl, "poll:x", "ok", []string{"a"})
	waitKey(t, cl, "poll:x", "a", func(p *protocol.Publication) bool { return p.Version == 1 && string(p.Data) == "2" })
}

// TestSharedPollExpiry: keys whose signature expired past the grace stop
// being pushed; the track reply tells the client when its signature
// expires.
func TestSharedPollExpiry(t *testing.T) {
	cfg := sharedPollConfig()
	cfg.Channels.Namespaces[0].SharedPoll.TrackExpiredExtraDelay = time.Second
	b := newPollBackend()
	b.set("a", `1`, 1)
	_, url := pollNode(t, cfg, b, "A")
	cl := dial(t, url, protocol.TypeJSON)
	cl.connect(connToken(t, "42", 0, nil))
	pollSubscribe(t, cl, "poll:x")
	res := mustTrack(t, cl, "poll:x", "hour", []string{"a"})
	if !res.Expires || res.Ttl < 3500 || res.Ttl > 3600 {
		t.Fatalf("track reply expires=%v ttl=%d, want an hour", res.Expires, res.Ttl)
	}
	res = mustTrack(t, cl, "poll:x", "short", []string{"b"})
	if !res.Expires || res.Ttl > 1 {
		t.Fatalf("track reply expires=%v ttl=%d, want a second", res.Expires, res.Ttl)
	}
	b.set("b", `1`, 1)
	waitKey(t, cl, "poll:x", "b", func(p *protocol.Publication) bool { return p.Version == 1 })
	time.Sleep(4 * time.Second) // expiry, grace, sweep
	b.set("a", `2`, 2)
	b.set("b", `2`, 2)
	waitKey(t, cl, "poll:x", "a", func(p *protocol.Publication) bool { return p.Version == 2 })
	time.Sleep(300 * time.Millisecond)
	if n := len(keyPubs(cl, "poll:x", "b")); n != 1 {
		t.Fatalf("%d pushes of b, whose signature expired: want only the first", n)
	}
}

// lossyBroker drops the shared-poll values a node sends to the others
// while lose is set, as a broker that loses messages would.
type lossyBroker struct {
	broker.Broker
	lose atomic.Bool
}

func (b *lossyBroker) PublishControl(data []byte, nodeID string) error {
	if b.lose.Load() {
		var cmd controlpb.Command
		if err := cmd.UnmarshalVT(data); err == nil && cmd.PollUpdate != nil {
			return nil
		}
	}
	return b.Broker.PublishControl(data, nodeID)
}

// TestSharedPollHealsLostValues: values lost between nodes reach the
// clients anyway, at the next renewal of interest, which carries the
// versions each node has.
func TestSharedPollHealsLostValues(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, e enginetest.Engine) {
		b := newPollBackend()
		keys := make([]string, 10)
		for i := range keys {
			keys[i] = "key" + strconv.Itoa(i)
			b.set(keys[i], `1`, 1)
		}
		var brokers []*lossyBroker
		var nodes []*gyre.Node
		var clients []*testClient
		for _, name := range []string{"A", "B"} {
			cfg := e.Same(t, sharedPollConfig(), "c")
			lb := &lossyBroker{Broker: cfg.Broker}
			cfg.Broker = lb
			n, url := pollNode(t, cfg, b, name)
			brokers, nodes = append(brokers, lb), append(nodes, n)
			cl := dial(t, url, protocol.TypeJSON)
			cl.connect(connToken(t, name, 0, nil))
			clients = append(clients, cl)
		}
		waitNodes(t, nodes)
		for _, cl := range clients {
			pollSubscribe(t, cl, "poll:many")
			mustTrack(t, cl, "poll:many", "ok", keys)
		}
		for _, cl := range clients {
			for _, k := range keys {
				waitKey(t, cl, "poll:many", k, func(p *protocol.Publication) bool { return p.Version == 1 })
			}
		}
		for _, lb := range brokers {
			lb.lose.Store(true)
		}
		for _, k := range keys {
			b.set(k, `2`, 2)
		}
		// Each node's own keys reach its client; the others' are lost.
		time.Sleep(300 * time.Millisecond)
		lost := 0
		for _, cl := range clients {
			for _, k := range keys {
				if len(keyPubs(cl, "poll:many", k)) == 1 {
					lost++
				}
			}
		}
		if lost == 0 {
			t.Fatal("no value was lost: the test lost nothing to heal")
		}
		for _, lb := range brokers {
			lb.lose.Store(false)
		}
		for _, cl := range clients {
			for _, k := range keys {
				waitKey(t, cl, "poll:many", k, func(p *protocol.Publication) bool { return p.Version == 2 })
			}
		}
	})
}

// waitNodes waits until each node knows all of them.
func waitNodes(t *testing.T, nodes []*gyre.Node) {
	t.Helper()
	for _, n := range nodes {
		deadline := time.Now().Add(15 * time.Second)
		for len(n.Info()) != len(nodes) {
			if time.Now().After(deadline) {
				t.Fatalf("node knows %d nodes, want %d", len(n.Info()), len(nodes))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestSharedPollConcurrencyBound: a slow backend never has more calls in
// flight from a node than its SharedPollConcurrency, however many
// channels and batches are due.
func TestSharedPollConcurrencyBound(t *testing.T) {
	cfg := sharedPollConfig()
	cfg.SharedPollConcurrency = 2
	var inFlight, most atomic.Int32
	var calls atomic.Int32
	slow := func(_ context.Context, e gyre.SharedPollRefreshEvent) (gyre.SharedPollRefreshReply, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		calls.Add(1)
		time.Sleep(50 * time.Millisecond)
		var rep gyre.SharedPollRefreshReply
		for _, it := range e.Items {
			rep.Items = append(rep.Items, gyre.SharedPollItem{Key: it.Key, Data: []byte(`1`), Version: 1})
		}
		return rep, nil
	}
	_, url := newTestNodeWith(t, cfg, func(n *gyre.Node) {
		n.OnSharedPollRefresh(slow)
		n.OnTrack(trackAll)
	})
	cl := dial(t, url, protocol.TypeJSON)
	cl.connect(connToken(t, "42", 0, nil))
	keys := make([]string, 20) // 3 batches of 7 per channel
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	for c := range 6 {
		ch := "poll:c" + strconv.Itoa(c)
		pollSubscribe(t, cl, ch)
		mustTrack(t, cl, ch, "ok", keys)
	}
	for c := range 6 {
		for _, k := range keys {
			waitKey(t, cl, "poll:c"+strconv.Itoa(c), k, func(p *protocol.Publication) bool { return p.Version == 1 })
		}
	}
	if got := most.Load(); got > 2 || got < 2 {
		t.Fatalf("at most %d calls in flight (of %d calls), want 2: the bound", got, calls.Load())
	}
}
