package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/config"
)

// churnSeen is what a server saw of a churn run, from its node's event
// handlers.
type churnSeen struct {
	connects, unsubscribes, disconnects atomic.Int64

	mu       sync.Mutex
	users    map[string]int
	channels map[string]int
}

func newChurnSeen() *churnSeen {
	return &churnSeen{users: map[string]int{}, channels: map[string]int{}}
}

func (s *churnSeen) setup(n *gyre.Node) {
	n.OnConnect(func(c *gyre.Client) {
		s.mu.Lock()
		s.users[c.UserID()]++
		s.mu.Unlock()
		s.connects.Add(1)
	})
	n.OnUnsubscribe(func(_ *gyre.Client, e gyre.UnsubscribeEvent) {
		s.mu.Lock()
		s.channels[e.Channel]++
		s.mu.Unlock()
		s.unsubscribes.Add(1)
	})
	n.OnDisconnect(func(*gyre.Client, gyre.DisconnectEvent) { s.disconnects.Add(1) })
}

// chatNamespace lets clients subscribe to chat:… channels.
func chatNamespace(c *config.Config) {
	c.Channel.Namespaces = []config.Namespace{{Name: "chat", ChannelOptions: config.ChannelOptions{AllowSubscribeForClient: true}}}
}

// TestChurn churns over two nodes and checks that the tool's counts add
// up and agree with what each node saw: every connect matched by a
// disconnect, every subscription by an unsubscribe, the connections
// spread over the nodes in turn, the users and channels as asked.
func TestChurn(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
	}{
		{"json", nil},
		{"protobuf unsubscribe", func(c *Config) { c.Protocol = protocol.TypeProtobuf; c.Unsubscribe = true }},
		{"procs rate", func(c *Config) { c.Procs = 2; c.WorkerCommand = workerCommand(t); c.Rate = 150 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := []*churnSeen{newChurnSeen(), newChurnSeen()}
			srvs := []testServer{startServerNode(t, chatNamespace, seen[0].setup), startServerNode(t, chatNamespace, seen[1].setup)}
			pid := os.Getpid()
			cfg := Config{
				URL:        srvs[0].ws + "," + srvs[1].ws,
				HMACSecret: testSecret,
				Conns:      20,
				Users:      7,
				Channels:   5,
				Channel:    "chat:room",
				Hold:       100 * time.Millisecond,
				Duration:   time.Second,
				PIDs:       []int{pid, pid},
			}
			if tt.change != nil {
				tt.change(&cfg)
			}
			var progress bytes.Buffer
			cfg.Progress = &syncWriter{w: &progress}
			res, err := Run(context.Background(), ScenarioChurn, cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkChurn(t, res, cfg)
			for i, s := range srvs {
				checkChurnSeen(t, s, seen[i], res.Churn.Nodes[i])
			}
			checkChurnUsers(t, seen, cfg)
			var table bytes.Buffer
			if err := res.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"scenario       churn", "subscribes", "node 2", "per subscribe"} {
				if !strings.Contains(table.String(), want) {
					t.Fatalf("no %q in the table:\n%s", want, table.String())
				}
			}
			if _, err := json.Marshal(res); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// checkChurn checks the counts of a run without failures.
func checkChurn(t *testing.T, res *Result, cfg Config) {
	t.Helper()
	ch := res.Churn
	if ch == nil {
		t.Fatalf("no churn summary: %+v", res)
	}
	if len(res.Errors) != 0 || ch.failures() != 0 {
		t.Fatalf("churn %+v, errors %v: want none", ch.ChurnCounts, res.Errors)
	}
	// Every slot connected once at least, and its connections were
	// replaced.
	if ch.Connects <= int64(cfg.Conns) {
		t.Fatalf("churn %+v: want more than %d connects", ch.ChurnCounts, cfg.Conns)
	}
	if ch.Disconnects != ch.Connects || ch.Subscribes != ch.Connects {
		t.Fatalf("churn %+v: every connect subscribed and disconnected", ch.ChurnCounts)
	}
	wantUnsub := int64(0)
	if cfg.Unsubscribe {
		wantUnsub = ch.Subscribes
	}
	if ch.Unsubscribes != wantUnsub || ch.Unsubscribe != cfg.Unsubscribe {
		t.Fatalf("churn %+v: want %d unsubscribes", ch.ChurnCounts, wantUnsub)
	}
	if ch.ConnectLatency.Count != uint64(ch.Connects) || ch.SubscribeLatency.Count != uint64(ch.Subscribes) {
		t.Fatalf("latency samples %d and %d for %+v", ch.ConnectLatency.Count, ch.SubscribeLatency.Count, ch.ChurnCounts)
	}
	if c := res.Connections; c.Opened != ch.Connects || c.Dropped != 0 || c.Failed != 0 || c.Subs != 1 {
		t.Fatalf("connections %+v for %+v", c, ch.ChurnCounts)
	}
	if ch.Conns != cfg.Conns || ch.Users != cfg.Users || ch.Channels != cfg.Channels || ch.HoldSeconds != cfg.Hold.Seconds() {
		t.Fatalf("churn settings %+v", ch)
	}
	// The nodes' shares add up, and go in turn: each worker alternates,
	// so the two differ by at most one per worker.
	var sum ChurnCounts
	for _, n := range ch.Nodes {
		sum.add(n.ChurnCounts)
	}
	workers := int64(max(cfg.Procs, 1))
	if len(ch.Nodes) != 2 || sum != ch.ChurnCounts || abs(ch.Nodes[0].Connects-ch.Nodes[1].Connects) > workers {
		t.Fatalf("nodes %+v, total %+v: want two even shares", ch.Nodes, ch.ChurnCounts)
	}
	s := res.Server
	if s == nil || len(s.PIDs) != 2 || s.RSSEnd == 0 || ch.Nodes[1].PID != cfg.PIDs[1] {
		t.Fatalf("server %+v, nodes %+v: want both processes", s, ch.Nodes)
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// checkChurnSeen compares a node's share with what it saw, once it has
// taken in the last disconnects.
func checkChurnSeen(t *testing.T, srv testServer, seen *churnSeen, n NodeChurn) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for seen.disconnects.Load() < n.Disconnects && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	info := srv.node.LocalInfo()
	got := ChurnCounts{
		Connects:    seen.connects.Load(),
		Subscribes:  seen.unsubscribes.Load(), // every subscription ended
		Disconnects: seen.disconnects.Load(),
	}
	want := ChurnCounts{Connects: n.Connects, Subscribes: n.Subscribes, Disconnects: n.Disconnects}
	if got != want || srv.wsRequests.Load() != n.Connects || info.NumClients != 0 || info.NumSubs != 0 {
		t.Fatalf("node %s saw %+v, %d WebSocket requests, %d clients and %d subscriptions left; the tool counted %+v",
			n.URL, got, srv.wsRequests.Load(), info.NumClients, info.NumSubs, want)
	}
}

// checkChurnUsers: the connections were users bench-0 to bench-(Users-1),
// every one of them, and subscribed to the channels asked for.
func checkChurnUsers(t *testing.T, seen []*churnSeen, cfg Config) {
	t.Helper()
	users, channels := map[string]bool{}, map[string]bool{}
	for _, s := range seen {
		s.mu.Lock()
		for u := range s.users {
			users[u] = true
		}
		for c := range s.channels {
			channels[c] = true
		}
		s.mu.Unlock()
	}
	want := map[string]bool{}
	for i := range cfg.Users {
		want[fmt.Sprintf("bench-%d", i)] = true
	}
	if fmt.Sprint(users) != fmt.Sprint(want) {
		t.Fatalf("users %v, want %v", users, want)
	}
	for c := range channels {
		var n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(c, cfg.Channel+"-churn-"), "%d", &n); err != nil || n >= cfg.Channels || !strings.HasPrefix(c, cfg.Channel+"-churn-") {
			t.Fatalf("channel %q: want %s-churn-N, N below %d", c, cfg.Channel, cfg.Channels)
		}
	}
}

// TestChurnRefused: refused subscribes and a server that is not there
// are counted, and a refused subscription's connection still comes and
// goes.
func TestChurnRefused(t *testing.T) {
	srv := startServerWith(t, func(c *config.Config) { c.Channel.WithoutNamespace.AllowSubscribeForClient = false })
	tests := []struct {
		name  string
		url   string
		check func(*testing.T, *ChurnResult)
	}{
		{"subscribe refused", srv.ws, func(t *testing.T, ch *ChurnResult) {
			if ch.Connects == 0 || ch.SubscribeRefused != ch.Connects || ch.Subscribes != 0 || ch.Disconnects != ch.Connects {
				t.Fatalf("churn %+v: every subscribe refused, every connection disconnected", ch.ChurnCounts)
			}
		}},
		{"no server", "ws://127.0.0.1:1/connection/websocket", func(t *testing.T, ch *ChurnResult) {
			if ch.ConnectErrors == 0 || ch.Connects != 0 || ch.Disconnects != 0 {
				t.Fatalf("churn %+v: want connect errors only", ch.ChurnCounts)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{URL: tt.url, HMACSecret: testSecret, Conns: 5, Hold: 50 * time.Millisecond, Duration: 300 * time.Millisecond}
			res, err := Run(context.Background(), ScenarioChurn, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Errors) == 0 {
				t.Fatal("no errors reported")
			}
			tt.check(t, res.Churn)
		})
	}
}

// TestStayFor: stays are within [hold/2, 3·hold/2] with mean hold; first
// stays within [0, 3·hold/2] with the mean of a residual stay, 13/24 of
// hold (E[L²]/2E[L] for L uniform in [hold/2, 3·hold/2]).
func TestStayFor(t *testing.T) {
	const hold, n = time.Second, 100000
	for _, first := range []bool{false, true} {
		lo, wantMean := hold/2, 1.0
		if first {
			lo, wantMean = 0, 13.0/24
		}
		var sum time.Duration
		for range n {
			d := stayFor(hold, first)
			if d < lo || d > hold*3/2 {
				t.Fatalf("first %v: stay %v out of [%v, %v]", first, d, lo, hold*3/2)
			}
			sum += d
		}
		if mean := (sum / n).Seconds(); mean < wantMean*0.98 || mean > wantMean*1.02 {
			t.Fatalf("first %v: mean stay %.3fs, want %.3fs", first, mean, wantMean)
		}
	}
}
