package loadtest

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/server/config"
)

// TestSpreadOverNodes runs fanout and channels over two nodes on one
// Redis: the subscribers of one channel (or of the personal channels)
// split between the nodes in turn, the publishers between their APIs,
// and everything published through either node reaches every
// subscriber on both, once and in order; the servers' figures are sums,
// with a line per process.
func TestSpreadOverNodes(t *testing.T) {
	r := redistest.Start(t)
	onRedis := func(c *config.Config) {
		c.Engine.Type = "redis"
		c.Engine.Redis.Address = []string{r.Addr}
	}
	for _, scenario := range []string{ScenarioFanout, ScenarioChannels} {
		t.Run(scenario, func(t *testing.T) {
			srvs := []testServer{startServerWith(t, onRedis), startServerWith(t, onRedis)}
			pid := os.Getpid()
			cfg := srvs[0].config()
			cfg.Channel = "spread-" + scenario
			cfg.URL = srvs[0].ws + "," + srvs[1].ws
			cfg.API = srvs[0].api + "," + srvs[1].api
			cfg.Publishers = 2
			cfg.Rate = 40
			// The third process is one that serves no URL (an API-only
			// node, say): it is summed all the same.
			cfg.PIDs = []int{pid, pid, pid}
			res, err := Run(context.Background(), scenario, cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkOpened(t, res, cfg.Conns)
			checkDelivery(t, res)
			for i, s := range srvs {
				if n := s.wsRequests.Load(); n != int64(cfg.Conns/2) {
					t.Errorf("node %d took %d connections, want %d", i, n, cfg.Conns/2)
				}
				if s.apiRequests.Load() == 0 {
					t.Errorf("node %d got no API request", i)
				}
			}
			sr := res.Server
			if sr == nil || len(sr.Nodes) != 3 || sr.Nodes[1].URL != srvs[1].ws || sr.Nodes[2].URL != "" || sr.CPUPerDeliveryMicros <= 0 {
				t.Fatalf("server %+v: want three processes, the first two with their URLs", sr)
			}
			var sum float64
			for _, n := range sr.Nodes {
				sum += n.CPUSeconds
			}
			if sum != sr.CPUSeconds {
				t.Fatalf("server cpu %v, the nodes' sum %v", sr.CPUSeconds, sum)
			}
			var table bytes.Buffer
			if err := res.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"per delivery (the CPU of all 3)", "server 2", srvs[1].ws, "(no --url)"} {
				if !strings.Contains(table.String(), want) {
					t.Fatalf("no %q in the table:\n%s", want, table.String())
				}
			}
		})
	}
}

// readyWriter calls onReady once, the first time the progress says
// every connection is open.
type readyWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	onReady func()
}

func (w *readyWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if w.onReady != nil && strings.Contains(w.buf.String(), "ready: ") {
		go w.onReady()
		w.onReady = nil
	}
	return len(b), nil
}

func (w *readyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestReconnect takes one of two nodes down once every connection is
// open: its connections, and only they, must come back on the other
// node, subscribed; with fanout, through the publications that go on.
func TestReconnect(t *testing.T) {
	tests := []struct {
		name     string
		scenario string
		procs    int
	}{
		{"idle", ScenarioIdle, 0},
		{"idle procs", ScenarioIdle, 2},
		{"fanout", ScenarioFanout, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srvs := []testServer{startServer(t), startServer(t)}
			cfg := srvs[0].config()
			cfg.Channel = "reconnect-" + strings.ReplaceAll(tt.name, " ", "-")
			cfg.URL = srvs[0].ws + "," + srvs[1].ws
			cfg.PIDs = nil // one node goes away
			cfg.Reconnect = true
			cfg.Duration = 3 * time.Second
			cfg.Rate = 20
			if tt.procs > 0 {
				cfg.Procs = tt.procs
				cfg.WorkerCommand = workerCommand(t)
			}
			progress := &readyWriter{onReady: srvs[1].stop}
			cfg.Progress = progress
			res, err := Run(context.Background(), tt.scenario, cfg)
			if err != nil {
				t.Fatal(err)
			}
			half := int64(cfg.Conns / 2)
			rc := res.Reconnect
			if rc == nil || rc.Dropped != half || rc.Reconnected != half || rc.Failed != 0 ||
				rc.Attempts < half || rc.Latency.Count != uint64(half) || rc.Seconds <= 0 {
				t.Fatalf("reconnect %+v, errors %v: want the %d of the node that went back on the other\n%s", rc, res.Errors, half, progress)
			}
			if res.Connections.Dropped != half {
				t.Fatalf("connections %+v: want %d dropped", res.Connections, half)
			}
			if n := srvs[0].wsRequests.Load(); n != int64(cfg.Conns) {
				t.Fatalf("node 1 took %d connections, want its %d and the other's %d", n, half, half)
			}
			if !strings.Contains(progress.String(), "ready: 20 of 20 connections open") {
				t.Fatalf("no ready line in the progress:\n%s", progress)
			}
			var table bytes.Buffer
			if err := res.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(table.String(), "10 dropped, 10 back, 0 not back by the end; all back") {
				t.Fatalf("reconnects not in the table:\n%s", table.String())
			}
			if tt.scenario == ScenarioFanout && (res.Publish.Publications == 0 || res.Delivery.Received == 0) {
				t.Fatalf("publish %+v, delivery %+v", res.Publish, res.Delivery)
			}
		})
	}
}

// TestReconnectWait: every wait is within [d/2, d] of a d that doubles
// from firstWait up to maxWait.
func TestReconnectWait(t *testing.T) {
	least := func(int64) int64 { return 0 }
	most := func(n int64) int64 { return n - 1 }
	d := firstWait
	for n := range 40 {
		lo, hi := reconnectWait(n, least), reconnectWait(n, most)
		if lo != d/2 || hi != d {
			t.Fatalf("attempt %d: waits %v to %v, want %v to %v", n, lo, hi, d/2, d)
		}
		d = min(2*d, maxWait)
	}
}
