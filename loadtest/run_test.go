package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/config"
)

// checkDelivery fails unless every publication reached every subscriber
// once and in order.
func checkDelivery(t *testing.T, res *Result) {
	t.Helper()
	d, p := res.Delivery, res.Publish
	if p == nil || d == nil {
		t.Fatalf("no publish or delivery summary: %+v", res)
	}
	if p.Publications == 0 || p.Errors != 0 {
		t.Fatalf("publish: %d accepted, %d errors (%v)", p.Publications, p.Errors, res.Errors)
	}
	want := int64(p.Publications) * res.Connections.Opened
	if d.Expected != want || d.Received != want || d.Lost != 0 || d.LossySubscribers != 0 || d.OutOfOrder != 0 {
		t.Fatalf("delivery %+v: want all %d received once, in order (errors %v)", d, want, res.Errors)
	}
	if d.Latency.Count != uint64(want) {
		t.Fatalf("latency samples %d, want %d", d.Latency.Count, want)
	}
	checkTraffic(t, res)
}

// checkTraffic fails unless the bytes received add up: every delivery
// carried its data, and what was not compressed took more bytes on the
// wire (the frame headers) than in messages.
func checkTraffic(t *testing.T, res *Result) {
	t.Helper()
	r := res.Received
	if r.Messages == 0 || r.WireBytes == 0 || r.MessageBytes < res.Delivery.Received*int64(res.Publish.Size) {
		t.Fatalf("received %+v: want at least %d deliveries of %d bytes", r, res.Delivery.Received, res.Publish.Size)
	}
	if r.CompressedMessages == 0 && (r.WireBytes <= r.MessageBytes || r.Ratio >= 1) {
		t.Fatalf("received %+v: uncompressed, the wire must carry more than the messages", r)
	}
	if !r.Compression && (r.Negotiated != 0 || r.NegotiatedBy != "") {
		t.Fatalf("received %+v: compression not offered", r)
	}
}

func checkOpened(t *testing.T, res *Result, conns int) {
	t.Helper()
	c := res.Connections
	if c.Opened != int64(conns) || c.Failed != 0 || c.Dropped != 0 || c.Latency.Count != uint64(conns) {
		t.Fatalf("connections %+v, want %d opened; errors %v", c, conns, res.Errors)
	}
	if len(res.Errors) != 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
}

func TestScenarios(t *testing.T) {
	srv := startServer(t)
	tests := []struct {
		name     string
		scenario string
		change   func(*Config)
		check    func(*testing.T, *Result)
	}{
		{"idle", ScenarioIdle, func(c *Config) { c.Subs = 3; c.Channels = 7 }, func(t *testing.T, r *Result) {
			if r.Connections.Subs != 3 || r.Server == nil || r.Server.RSSBefore == 0 || r.Server.RSSEnd == 0 {
				t.Fatalf("idle summary %+v %+v", r.Connections, r.Server)
			}
		}},
		{"fanout", ScenarioFanout, nil, checkDelivery},
		{"fanout protobuf", ScenarioFanout, func(c *Config) { c.Protocol = protocol.TypeProtobuf }, checkDelivery},
		{"fanout batch", ScenarioFanout, func(c *Config) { c.Batch = 10; c.Size = 1000 }, func(t *testing.T, r *Result) {
			checkDelivery(t, r)
			if r.Publish.Method != methodBatch || r.Publish.Publications != 10*uint64(r.Publish.Requests) {
				t.Fatalf("publish %+v: want batches of 10", r.Publish)
			}
		}},
		{"fanout publishers rate", ScenarioFanout, func(c *Config) { c.Publishers = 3; c.Rate = 300 }, checkDelivery},
		{"fanout json payload", ScenarioFanout, func(c *Config) { c.Payload = PayloadJSON; c.Size = 1000 }, func(t *testing.T, r *Result) {
			checkDelivery(t, r)
			if r.Publish.Payload != PayloadJSON || r.Received.MessageBytes < r.Delivery.Received*1000 {
				t.Fatalf("publish %+v, received %+v", r.Publish, r.Received)
			}
		}},
		{"channels", ScenarioChannels, nil, checkDelivery},
		{"channels protobuf", ScenarioChannels, func(c *Config) { c.Protocol = protocol.TypeProtobuf; c.Rate = 50 }, checkDelivery},
		{"connect", ScenarioConnect, nil, func(t *testing.T, r *Result) {
			if r.Connections.PerSecond <= 0 || r.Server == nil {
				t.Fatalf("connect summary %+v %+v", r.Connections, r.Server)
			}
		}},
		{"connect rate subs", ScenarioConnect, func(c *Config) { c.Rate = 200; c.Subs = 2 }, nil},
		{"token", ScenarioConnect, func(c *Config) {
			c.Token = signTest(t, "someone")
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := srv.config()
			cfg.Channel = "t" + strings.ReplaceAll(tt.name, " ", "-")
			if tt.change != nil {
				tt.change(&cfg)
			}
			var progress bytes.Buffer
			cfg.Progress = &syncWriter{w: &progress}
			res, err := Run(context.Background(), tt.scenario, cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkOpened(t, res, cfg.Conns)
			if tt.check != nil {
				tt.check(t, res)
			}
			var table bytes.Buffer
			if err := res.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(table.String(), "scenario       "+tt.scenario) {
				t.Fatalf("table:\n%s", table.String())
			}
			if _, err := json.Marshal(res); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestProcs splits the connections over child processes (this test
// binary run again) and checks that their results add up.
func TestProcs(t *testing.T) {
	srv := startServer(t)
	for _, scenario := range []string{ScenarioFanout, ScenarioIdle} {
		t.Run(scenario, func(t *testing.T) {
			cfg := srv.config()
			cfg.Channel = "procs-" + scenario
			cfg.Conns = 21
			cfg.Procs = 2
			cfg.WorkerCommand = workerCommand(t)
			res, err := Run(context.Background(), scenario, cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkOpened(t, res, cfg.Conns)
			if res.Procs != 2 {
				t.Fatalf("procs %d, want 2", res.Procs)
			}
			if scenario == ScenarioFanout {
				checkDelivery(t, res)
			}
		})
	}
}

// TestFailures: what cannot work is counted and said, not hidden.
func TestFailures(t *testing.T) {
	srv := startServer(t)
	tests := []struct {
		name     string
		scenario string
		change   func(*Config)
		wantErr  bool
		want     string // in the errors of the result
	}{
		{"bad token", ScenarioConnect, func(c *Config) { c.HMACSecret = "wrong" }, false, "3500"},
		{"no server", ScenarioConnect, func(c *Config) { c.URL = "ws://127.0.0.1:1/connection/websocket" }, false, "connect"},
		{"bad api key", ScenarioFanout, func(c *Config) { c.APIKey = "wrong" }, false, "status 401"},
		{"fanout without subscribers", ScenarioFanout, func(c *Config) { c.HMACSecret = "wrong" }, true, "3500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := srv.config()
			cfg.Conns = 5
			tt.change(&cfg)
			res, err := Run(context.Background(), tt.scenario, cfg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if res == nil {
				t.Fatal("no result")
			}
			found := false
			for _, e := range res.Errors {
				found = found || strings.Contains(e.Message, tt.want)
			}
			if !found {
				t.Fatalf("errors %v: want one with %q", res.Errors, tt.want)
			}
		})
	}
}

// TestFanoutCompression runs fanout with compression offered and the
// JSON feed against Gyre with websocket.compression on: everything must
// arrive, and once Gyre answers the offer, compressed.
func TestFanoutCompression(t *testing.T) {
	srv := startServerWith(t, func(c *config.Config) { c.WebSocket.Compression = true })
	for _, procs := range []int{0, 2} {
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) {
			cfg := srv.config()
			cfg.Channel = fmt.Sprintf("compressed-%d", procs)
			cfg.Compression = true
			cfg.Payload = PayloadJSON
			cfg.Size = 2048
			if procs > 0 {
				cfg.Procs = procs
				cfg.WorkerCommand = workerCommand(t)
			}
			res, err := Run(context.Background(), ScenarioFanout, cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkOpened(t, res, cfg.Conns)
			checkDelivery(t, res)
			r := res.Received
			var table bytes.Buffer
			if err := res.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			if !r.Compression || !strings.Contains(table.String(), "offered; negotiated by") {
				t.Fatalf("compression not reported: %+v\n%s", r, table.String())
			}
			if r.Negotiated == 0 {
				if r.NegotiatedBy != "none" || r.CompressedMessages != 0 {
					t.Fatalf("received %+v: none negotiated, yet compressed", r)
				}
				t.Skip("the server does not answer permessage-deflate")
			}
			if r.NegotiatedBy != "all" || r.Negotiated != int64(cfg.Conns) || r.ContextTakeover != 0 {
				t.Fatalf("received %+v: want all %d connections without context takeover", r, cfg.Conns)
			}
			if r.CompressedMessages == 0 || r.Ratio < 2.5 {
				t.Fatalf("received %+v: want the 2 KB JSON feed compressed about 3 times", r)
			}
		})
	}
}

// TestPingPong holds connections through several server pings with a
// short pong timeout: a connection that did not answer would be closed
// with 3012 and count as dropped.
func TestPingPong(t *testing.T) {
	srv := startServerWith(t, func(c *config.Config) {
		c.Client.PingInterval = 2 * time.Second // the least allowed
		c.Client.PongTimeout = 500 * time.Millisecond
	})
	for _, typ := range []protocol.Type{protocol.TypeJSON, protocol.TypeProtobuf} {
		t.Run(typ.String(), func(t *testing.T) {
			t.Parallel()
			cfg := srv.config()
			cfg.Channel = "ping-" + typ.String()
			cfg.Protocol = typ
			cfg.Duration = 5 * time.Second
			res, err := Run(context.Background(), ScenarioIdle, cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkOpened(t, res, cfg.Conns)
		})
	}
}
