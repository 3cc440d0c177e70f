package cluster_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

// TestTopologies runs two nodes over a Redis Cluster of three masters,
// over two standalone servers that channels are sharded between, and over
// a master watched by a Sentinel: what the API of one node publishes
// reaches a client of the other, in order, and both see the same history
// and presence.
func TestTopologies(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		redis func(t *testing.T) redisSetup
	}{
		{"cluster", startClusterRedis},
		{"sharded", startShardedRedis},
		{"sentinel", func(t *testing.T) redisSetup {
			s := redistest.StartSentinel(t)
			return redisSetup{config: map[string]any{
				"sentinel_address":     []string{s.Sentinel.Addr},
				"sentinel_master_name": redistest.MasterName,
			}}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.redis(t)
			a := gyreproc.Start(t, "A", nodeConfig("A", r.config))
			b := gyreproc.Start(t, "B", nodeConfig("B", r.config))
			checkAcrossNodes(t, a, b)
			checkSpread(t, r.shards, topoChannels())
		})
	}
}

// redisSetup is the engine.redis section of a Redis setup the test
// started.
type redisSetup struct {
	config map[string]any
	// shards are the standalone servers channels are sharded between,
	// when there are several.
	shards []*redistest.Server
}

// startSingleRedis starts one standalone server.
func startSingleRedis(t *testing.T) redisSetup {
	return redisSetup{config: redisAt(redistest.Start(t).Addr)}
}

// startShardedRedis starts two standalone servers, listed as several
// addresses so that channels are sharded between them by hash.
func startShardedRedis(t *testing.T) redisSetup {
	shards := []*redistest.Server{redistest.Start(t), redistest.Start(t)}
	return redisSetup{config: redisAt(shards[0].Addr, shards[1].Addr), shards: shards}
}

// startClusterRedis starts a Redis Cluster of three masters.
func startClusterRedis(t *testing.T) redisSetup {
	c := redistest.StartCluster(t, 3)
	return redisSetup{config: map[string]any{"cluster_address": c.Addrs()}}
}

// checkSpread checks, when channels are sharded between several servers,
// that the history of each channel is on exactly one of them and that
// every server holds some: the setup is really sharded.
func checkSpread(t *testing.T, shards []*redistest.Server, channels []string) {
	t.Helper()
	if len(shards) < 2 {
		return
	}
	where := map[string][]int{}
	for i, s := range shards {
		out, err := s.Cli("--scan", "--pattern", "gyre.s.*")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for key := range strings.FieldsSeq(out) {
			ch := strings.TrimPrefix(key, "gyre.s.")
			if slices.Contains(channels, ch) {
				where[ch] = append(where[ch], i)
				n++
			}
		}
		if n == 0 {
			t.Errorf("Redis %d (%s) holds the history of none of %d channels", i, s.Addr, len(channels))
		}
	}
	for _, ch := range channels {
		if len(where[ch]) != 1 {
			t.Errorf("history of %s is on Redis %v, want exactly one", ch, where[ch])
		}
	}
}

// topoChannels are the channels of checkAcrossNodes: several, so that
// a cluster or a sharded setup spreads them.
func topoChannels() []string {
	var channels []string
	for i := range 6 {
		channels = append(channels, "chat:topo"+strconv.Itoa(i))
	}
	return channels
}

// checkAcrossNodes publishes through b into channels a client of a
// follows, then reads history and presence on both nodes.
func checkAcrossNodes(t *testing.T, a, b *gyreproc.Node) {
	t.Helper()
	const perChannel = 10
	channels := topoChannels()
	c, conn := connectUser(t, a, "alice")
	for _, ch := range channels {
		c.MustSubscribe(ch)
	}
	for i := range perChannel {
		for _, ch := range channels {
			data := json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)
			b.MustCall(t, "publish", map[string]any{"channel": ch, "data": data}, nil)
		}
	}
	for _, ch := range channels {
		c.WaitFor(ch+" publications", func() bool { return len(c.Pubs(ch)) >= perChannel })
		for i, p := range c.Pubs(ch) {
			if want := `{"i":` + strconv.Itoa(i) + `}`; p.Offset != uint64(i+1) || string(p.Data) != want {
				t.Errorf("%s: publication %d is %s at offset %d, want %s at %d", ch, i, p.Data, p.Offset, want, i+1)
			}
		}
		for _, n := range []*gyreproc.Node{a, b} {
			var h struct {
				Publications []struct {
					Data   json.RawMessage `json:"data"`
					Offset uint64          `json:"offset"`
				} `json:"publications"`
			}
			n.MustCall(t, "history", map[string]any{"channel": ch, "limit": -1}, &h)
			if len(h.Publications) != perChannel {
				t.Fatalf("history of %s on node %s: %d publications, want %d", ch, n.Name, len(h.Publications), perChannel)
			}
			for i, p := range h.Publications {
				if want := `{"i":` + strconv.Itoa(i) + `}`; p.Offset != uint64(i+1) || string(p.Data) != want {
					t.Errorf("history of %s on node %s: %d is %s at %d", ch, n.Name, i, p.Data, p.Offset)
				}
			}
		}
		if got := presenceClients(t, b, ch); len(got) != 1 || got[conn.Client] != "alice" {
			t.Errorf("presence of %s on node B: %v, want alice's client %s", ch, got, conn.Client)
		}
	}
}
