package sdk

import (
	"os"
	"testing"

	"github.com/centrifugal/centrifuge-go"

	"github.com/gyrehq/gyre/tests/sdk/go/internal/gyretest"
)

// natsSetups are the ways two nodes share channels with history over NATS:
// history in JetStream, or redisnats (history in Redis). Presence is the
// Redis engine's in both.
var natsSetups = []struct {
	name   string
	broker func(natsURL, redisAddr string) map[string]any
}{
	{"nats-jetstream", func(natsURL, _ string) map[string]any {
		return map[string]any{"enabled": true, "type": "nats", "nats": map[string]any{
			"url": natsURL, "jetstream": map[string]any{"enabled": true},
		}}
	}},
	{"redisnats", func(natsURL, redisAddr string) map[string]any {
		return map[string]any{"enabled": true, "type": "redisnats",
			"nats":  map[string]any{"url": natsURL},
			"redis": map[string]any{"address": []string{redisAddr}},
		}
	}},
}

// TestNodesOverNATS runs two nodes, A and B, in each NATS setup: a client on
// A receives in order what the API of B publishes, and recovers what B
// published while it was disconnected.
func TestNodesOverNATS(t *testing.T) {
	for _, setup := range natsSetups {
		t.Run(setup.name, func(t *testing.T) {
			t.Parallel()
			r, n := startRedis(t), startNATS(t)
			node := func(name string) *gyretest.Server {
				return startNode(t, func() map[string]any {
					cfg := onRedis(config(), name, r.Addr)
					cfg["broker"] = setup.broker(n.URL, r.Addr)
					return cfg
				})
			}
			a, b := node("A"), node("B")

			t.Run("in order", func(t *testing.T) {
				eachCodec(t, func(t *testing.T, cd codec) {
					receivesInOrder(t, cd, a, b)
				})
			})
			t.Run("recovery", func(t *testing.T) {
				eachCodec(t, func(t *testing.T, cd codec) {
					recoversAcrossNodes(t, cd, a, b)
				})
			})
		})
	}
}

// receivesInOrder has a client on a receive twenty publications from the
// API of b, each once, in the order of their offsets.
func receivesInOrder(t *testing.T, cd codec, a, b *gyretest.Server) {
	c := newClient(t, cd, clientOptions{url: a.WSURL})
	c.connect(t)
	ch := channel("chat:nats-")
	s := newSub(t, c, ch, centrifuge.SubscriptionConfig{})
	s.subscribe(t)
	const count = 20
	for i := range count {
		if pos := publishOn(t, b, ch, map[string]any{"n": i}); pos.Offset != uint64(i+1) {
			t.Fatalf("publication %d got offset %d", i, pos.Offset)
		}
	}
	pubs := s.pubs.waitN(t, 0, count)
	for i, p := range pubs {
		if p.Offset != uint64(i+1) {
			t.Fatalf("publication %d arrived with offset %d:%s", i, p.Offset, show(pubs))
		}
		sameJSON(t, "publication", p.Data, map[string]any{"n": i})
	}
}

// recoversAcrossNodes has a client on a see one publication of b live,
// disconnect, miss three that b publishes, and recover them on a.
func recoversAcrossNodes(t *testing.T, cd codec, a, b *gyretest.Server) {
	c := newClient(t, cd, clientOptions{url: a.WSURL})
	c.connect(t)
	ch := channel("chat:nats-rec-")
	s, live := subscribeWithLive(t, b, c, ch, centrifuge.SubscriptionConfig{})
	recoversAfterDisconnect(t, b, c, ch, s, live)
}

// startNode starts gyre with cfg, stopped when the test ends, its log
// shown when the test failed.
func startNode(t *testing.T, cfg func() map[string]any) *gyretest.Server {
	t.Helper()
	s, err := gyretest.Start(gyretest.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gyre log (port %d):\n%s", s.Port, s.Log())
		}
		s.Stop()
	})
	return s
}

// onRedis is cfg for the node name on the Redis engine at addr.
func onRedis(cfg map[string]any, name, addr string) map[string]any {
	cfg["node"] = map[string]any{"name": name}
	cfg["engine"] = map[string]any{"type": "redis", "redis": map[string]any{"address": []string{addr}}}
	return cfg
}

// need fails t when missing says a server it needs is not installed, or
// skips it when skipVar is "1": a missing server is never skipped unnoticed.
func need(t *testing.T, missing, skipVar string) {
	t.Helper()
	if missing == "" {
		return
	}
	if os.Getenv(skipVar) == "1" {
		t.Skip(missing)
	}
	t.Fatal(missing)
}

// startRedis starts a redis-server for t, stopped when the test ends.
func startRedis(t *testing.T) *gyretest.Redis {
	t.Helper()
	need(t, gyretest.RedisMissing(), "GYRE_SKIP_REDIS")
	r, err := gyretest.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// startNATS starts a nats-server with JetStream for t, stopped when the
// test ends.
func startNATS(t *testing.T) *gyretest.NATS {
	t.Helper()
	need(t, gyretest.NATSMissing(), "GYRE_SKIP_NATS")
	n, err := gyretest.StartNATS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n
}

// TestBroadcastAcrossNodesOnRedis runs two nodes on one Redis: clients
// on A, each subscribed to a channel of its own without history, receive
// once, and in order with the channel's other publications, what the API
// of B broadcasts into their channels and one nobody subscribed. Redis
// carries such a broadcast as one message per shard naming the channels
// (broker/redis, group.go).
func TestBroadcastAcrossNodesOnRedis(t *testing.T) {
	t.Parallel()
	r := startRedis(t)
	a := startNode(t, func() map[string]any { return onRedis(config(), "A", r.Addr) })
	b := startNode(t, func() map[string]any { return onRedis(config(), "B", r.Addr) })
	eachCodec(t, func(t *testing.T, cd codec) {
		const clients = 6
		subs := make([]*sub, clients)
		channels := make([]string, 0, clients+1)
		for i := range subs {
			c := newClient(t, cd, clientOptions{url: a.WSURL})
			c.connect(t)
			subs[i] = newSub(t, c, channel("bcast-"), centrifuge.SubscriptionConfig{})
			subs[i].subscribe(t)
			channels = append(channels, subs[i].Channel)
		}
		channels = append(channels, channel("bcast-nobody-"))
		first := channels[0]
		publishOn(t, b, first, map[string]any{"n": "before"})
		var res struct {
			Responses []struct {
				Error *gyretest.APIError `json:"error"`
			} `json:"responses"`
		}
		if err := b.API("broadcast", map[string]any{"channels": channels, "data": map[string]any{"n": "all"}}, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Responses) != len(channels) {
			t.Fatalf("broadcast answered %d responses for %d channels", len(res.Responses), len(channels))
		}
		for i, resp := range res.Responses {
			if resp.Error != nil {
				t.Fatalf("broadcast into %s: %v", channels[i], resp.Error)
			}
		}
		publishOn(t, b, first, map[string]any{"n": "after"})
		for _, ch := range channels[1:clients] {
			publishOn(t, b, ch, map[string]any{"n": "end"})
		}
		for i, s := range subs {
			want := []string{"all", "end"}
			if i == 0 {
				want = []string{"before", "all", "after"}
			}
			for k, p := range s.pubs.waitN(t, 0, len(want)) {
				sameJSON(t, s.Channel, p.Data, map[string]any{"n": want[k]})
			}
		}
	})
}
