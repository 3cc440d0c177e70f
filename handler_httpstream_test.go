package gyre_test

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
)

// emulatedTransports are the bidirectional emulation transports and the
// formats each carries.
var emulatedTransports = []struct {
	name      string
	transport string
	proto     protocol.Type
}{
	{"http_stream json", "http_stream", protocol.TypeJSON},
	{"http_stream protobuf", "http_stream", protocol.TypeProtobuf},
	{"sse", "sse", protocol.TypeJSON},
}

func connectCmd(tok string) *protocol.Command {
	return &protocol.Command{Id: 1, Connect: &protocol.ConnectRequest{Token: tok, Name: "test"}}
}

// TestEmulatedSession runs a whole session over each emulated transport:
// connect (with session and node), subscribe through the emulation
// endpoint, a live publication, presence, history, and recovery on a new
// connection.
func TestEmulatedSession(t *testing.T) {
	for _, tt := range emulatedTransports {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTransportServer(t, gyre.Config{}, transportOptions{})
			c := openStream(t, s.url, tt.transport, tt.proto, connectCmd(connToken(t, "alice", 0, nil)))
			res := c.waitReply(1)
			if res.Error != nil {
				t.Fatalf("connect: %v", res.Error)
			}
			if res.Connect.Session == "" || res.Connect.Node != s.node.ID() {
				t.Errorf("connect result session %q node %q, want a session and node %q", res.Connect.Session, res.Connect.Node, s.node.ID())
			}
			if res.Connect.Ping != 25 || !res.Connect.Pong {
				t.Errorf("connect result ping %d pong %v, want 25 true", res.Connect.Ping, res.Connect.Pong)
			}

			sub := c.call(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: "chat:room"}})
			if sub.Error != nil {
				t.Fatalf("subscribe: %v", sub.Error)
			}
			if _, err := s.node.Publish("chat:room", []byte(`{"n":1}`)); err != nil {
				t.Fatal(err)
			}
			p := c.waitPush("publication", func(p *protocol.Push) bool { return p.Pub != nil })
			if p.Channel != "chat:room" || string(p.Pub.Data) != `{"n":1}` || p.Pub.Offset != 1 {
				t.Errorf("push %q %q offset %d", p.Channel, p.Pub.Data, p.Pub.Offset)
			}

			pres := c.call(&protocol.Command{Presence: &protocol.PresenceRequest{Channel: "chat:room"}})
			if pres.Error != nil || len(pres.Presence.Presence) != 1 || pres.Presence.Presence[res.Connect.Client].GetUser() != "alice" {
				t.Errorf("presence: %v", pres)
			}
			hist := c.call(&protocol.Command{History: &protocol.HistoryRequest{Channel: "chat:room", Limit: -1}})
			if hist.Error != nil || len(hist.History.Publications) != 1 || hist.History.Offset != 1 {
				t.Fatalf("history: %v", hist)
			}

			// Missed while away: the next connection recovers both.
			c.close()
			for _, d := range []string{`{"n":2}`, `{"n":3}`} {
				if _, err := s.node.Publish("chat:room", []byte(d)); err != nil {
					t.Fatal(err)
				}
			}
			c2 := openStream(t, s.url, tt.transport, tt.proto, connectCmd(connToken(t, "alice", 0, nil)),
				&protocol.Command{Id: 2, Subscribe: &protocol.SubscribeRequest{
					Channel: "chat:room", Recover: true, Offset: 1, Epoch: hist.History.Epoch,
				}})
			rec := c2.waitReply(2)
			if rec.Error != nil {
				t.Fatalf("recover: %v", rec.Error)
			}
			if !rec.Subscribe.Recovered || len(rec.Subscribe.Publications) != 2 || string(rec.Subscribe.Publications[1].Data) != `{"n":3}` {
				t.Errorf("recovery: recovered %v, %d publications", rec.Subscribe.Recovered, len(rec.Subscribe.Publications))
			}
		})
	}
}

// TestEmulatedServerDisconnect ends the stream with a disconnect push that
// tells the SDK the code and whether to reconnect.
func TestEmulatedServerDisconnect(t *testing.T) {
	for _, tt := range emulatedTransports {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTransportServer(t, gyre.Config{}, transportOptions{})
			c := openStream(t, s.url, tt.transport, tt.proto, connectCmd(connToken(t, "bob", 0, nil)))
			c.waitReply(1)
			if err := s.node.Disconnect("bob", nil, gyre.ClientFilter{}, nil); err != nil {
				t.Fatal(err)
			}
			d := c.waitEnd()
			if d == nil || d.Code != 3503 || d.Reconnect {
				t.Errorf("disconnect push %v, want 3503 without reconnect", d)
			}
		})
	}
}

// TestEmulatedConnectRefused: a bad token ends the stream with 3500.
func TestEmulatedConnectRefused(t *testing.T) {
	for _, tt := range emulatedTransports {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTransportServer(t, gyre.Config{}, transportOptions{})
			c := openStream(t, s.url, tt.transport, tt.proto, connectCmd("not-a-token"))
			if d := c.waitEnd(); d == nil || d.Code != 3500 {
				t.Errorf("disconnect push %v, want 3500", d)
			}
		})
	}
}

// TestEmulatedClientGoesAway: the client dropping the stream ends the
// connection, and its session is gone.
func TestEmulatedClientGoesAway(t *testing.T) {
	for _, tt := range emulatedTransports {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var rec *disconnectRecorder
			s := newTransportServer(t, gyre.Config{}, transportOptions{setup: func(n *gyre.Node) { rec = newDisconnectRecorder(n) }})
			c := openStream(t, s.url, tt.transport, tt.proto, connectCmd(connToken(t, "carol", 0, nil)))
			res := c.waitReply(1).Connect
			c.close()
			if code := rec.wait(t, res.Client); code != 3000 {
				t.Errorf("disconnect code %d, want 3000", code)
			}
			// The handler unregisters the session when it returns, just
			// after the disconnect.
			deadline := time.Now().Add(10 * time.Second)
			for {
				status, err := postEmulation(s.url+"/emulation", tt.proto, res.Node, res.Session, []byte("{}"))
				if err != nil {
					t.Fatal(err)
				}
				if status == http.StatusNotFound {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("emulation request for a closed session: status %d, want 404", status)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if n := s.node.LocalInfo().NumClients; n != 0 {
				t.Errorf("%d clients left", n)
			}
		})
	}
}

// TestEmulatedPings: the server pings emulated connections like WebSocket
// ones; pongs come through the emulation endpoint, and a client that does
// not send them is closed with 3012.
func TestEmulatedPings(t *testing.T) {
	cfg := gyre.Config{PingInterval: 2 * time.Second, PongTimeout: time.Second}
	for _, tt := range emulatedTransports {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTransportServer(t, cfg, transportOptions{})
			answering := openStream(t, s.url, tt.transport, tt.proto, connectCmd(connToken(t, "dan", 0, nil)))
			silent := openStream(t, s.url, tt.transport, tt.proto, connectCmd(connToken(t, "dan", 0, nil)))
			silent.mu.Lock()
			silent.noPong = true
			silent.mu.Unlock()
			if r := answering.waitReply(1); r.Connect == nil || r.Connect.Ping != 2 {
				t.Fatalf("connect: %v", r)
			}
			silent.waitReply(1)
			if d := silent.waitEnd(); d == nil || d.Code != 3012 {
				t.Errorf("silent client: disconnect %v, want 3012", d)
			}
			answering.waitFor("two pings", func() bool { return answering.pings >= 2 })
			if r := answering.call(&protocol.Command{Ping: &protocol.PingRequest{}}); r.Error != nil {
				t.Errorf("ping command after pongs: %v", r.Error)
			}
		})
	}
}

// TestEmulatedSlowReader: a client that never reads its stream is
// disconnected (slow, or a write timeout) instead of growing memory, and
// its request ends.
func TestEmulatedSlowReader(t *testing.T) {
	var rec *disconnectRecorder
	var connected atomic.Value
	returned := make(chan struct{})
	s := newTransportServer(t, gyre.Config{QueueMaxSize: 64 << 10}, transportOptions{
		setup: func(n *gyre.Node) {
			rec = newDisconnectRecorder(n)
			n.OnConnect(func(c *gyre.Client) { connected.Store(c.ID()) })
		},
		stream: gyre.StreamConfig{WriteTimeout: 200 * time.Millisecond},
		wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(w, r)
				close(returned)
			})
		},
	})
	body := `{"id":1,"connect":{"token":"` + connToken(t, "erin", 0, nil) + `"}}` + "\n" +
		`{"id":2,"subscribe":{"channel":"flood"}}`
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	req := "POST /connection/http_stream HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	// Wait for the subscription, then flood without reading.
	deadline := time.Now().Add(10 * time.Second)
	for s.node.LocalInfo().NumSubs == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no subscription")
		}
		time.Sleep(10 * time.Millisecond)
	}
	payload := []byte(`"` + strings.Repeat("x", 8<<10) + `"`)
	for i := 0; i < 2000 && s.node.LocalInfo().NumClients > 0; i++ {
		if _, err := s.node.Publish("flood", payload); err != nil {
			t.Fatal(err)
		}
	}
	code := rec.wait(t, connected.Load().(string))
	if code != 3008 && code != 3009 {
		t.Errorf("disconnect code %d, want 3008 (slow) or 3009 (write error)", code)
	}
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Error("the handler of the stream did not return")
	}
}
