package gyre_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/memory"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/token"
)

// TestEmulationBadRequests: every malformed or impossible emulation
// request gets its status, and none reaches a client.
func TestEmulationBadRequests(t *testing.T) {
	s := newTransportServer(t, gyre.Config{}, transportOptions{emulation: gyre.EmulationConfig{MaxRequestBodySize: 512}})
	self := s.node.ID()
	tests := []struct {
		name   string
		method string
		ct     string
		body   string
		want   int
	}{
		{"get", http.MethodGet, "", "", http.StatusMethodNotAllowed},
		{"too large", http.MethodPost, "application/json", `{"node":"` + self + `","session":"s","data":"` + strings.Repeat("x", 600) + `"}`, http.StatusRequestEntityTooLarge},
		{"not json", http.MethodPost, "application/json", `node=x`, http.StatusBadRequest},
		{"no session", http.MethodPost, "application/json", `{"node":"` + self + `","data":"{}"}`, http.StatusBadRequest},
		{"no node", http.MethodPost, "application/json", `{"session":"s","data":"{}"}`, http.StatusBadRequest},
		{"null data", http.MethodPost, "application/json", `{"node":"` + self + `","session":"s","data":null}`, http.StatusBadRequest},
		{"bad string data", http.MethodPost, "application/json", `{"node":"` + self + `","session":"s","data":"\x"}`, http.StatusBadRequest},
		{"bad protobuf", http.MethodPost, "application/octet-stream", "\xff\xff\xff", http.StatusBadRequest},
		{"unknown session", http.MethodPost, "application/json", `{"node":"` + self + `","session":"nope","data":"{}"}`, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, s.url+"/emulation", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.ct != "" {
				req.Header.Set("Content-Type", tt.ct)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d (%s), want %d", resp.StatusCode, bytes.TrimSpace(body), tt.want)
			}
		})
	}
}

// TestEmulationObjectData accepts a command given as a JSON object instead
// of the SDK's string.
func TestEmulationObjectData(t *testing.T) {
	s := newTransportServer(t, gyre.Config{}, transportOptions{})
	c := openStream(t, s.url, "http_stream", protocol.TypeJSON, connectCmd(connToken(t, "fay", 0, nil)))
	res := c.waitReply(1).Connect
	body := `{"node":"` + res.Node + `","session":"` + res.Session + `","data":{"id":7,"ping":{}}}`
	resp, err := http.Post(s.url+"/emulation", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if r := c.waitReply(7); r.Ping == nil {
		t.Errorf("reply %v, want a ping result", r)
	}
}

// TestEmulationUnknownNode: once a node has had time to hear of every
// other node, a request for a node it never heard of is refused with 404
// (the SDK reconnects); before, it is forwarded in case that node exists.
func TestEmulationUnknownNode(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the node's start-up grace period")
	}
	t.Parallel()
	s := newTransportServer(t, gyre.Config{}, transportOptions{})
	status, err := postEmulation(s.url+"/emulation", protocol.TypeJSON, "other-node", "s", []byte("{}"))
	if err != nil || status != http.StatusNoContent {
		t.Fatalf("fresh node: status %d, %v; want 204 (forwarded)", status, err)
	}
	deadline := time.Now().Add(40 * time.Second)
	for {
		status, err := postEmulation(s.url+"/emulation", protocol.TypeJSON, "other-node", "s", []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		if status == http.StatusNotFound {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %d, want 404 after the grace period", status)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestEmulationAcrossNodes holds an SSE session on node A and sends its
// commands to node B: B forwards them through the control channel, A runs
// them, and the replies come on A's stream. The two memory brokers share
// their control channel as Redis would share it between processes.
func TestEmulationAcrossNodes(t *testing.T) {
	bus := &controlBus{}
	// B runs first so that it hears A's announcement.
	b := newBusServer(t, bus)
	a := newBusServer(t, bus)
	if a.node.ID() == b.node.ID() {
		t.Fatal("nodes share an id")
	}
	c := openStream(t, a.url, "sse", protocol.TypeJSON, connectCmd(connToken(t, "gus", 0, nil)))
	res := c.waitReply(1).Connect
	if res.Node != a.node.ID() {
		t.Fatalf("connect result node %q, want A %q", res.Node, a.node.ID())
	}
	c.emulation = b.url + "/emulation"
	if r := c.call(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: "chat:x"}}); r.Error != nil {
		t.Fatalf("subscribe through B: %v", r.Error)
	}
	pres := c.call(&protocol.Command{Presence: &protocol.PresenceRequest{Channel: "chat:x"}})
	if pres.Error != nil || pres.Presence.Presence[res.Client].GetUser() != "gus" {
		t.Errorf("presence through B: %v", pres)
	}
	if _, err := a.node.Publish("chat:x", []byte(`{"via":"a"}`)); err != nil {
		t.Fatal(err)
	}
	c.waitPush("publication", func(p *protocol.Push) bool { return p.Pub != nil })

	// B cannot tell a session of A that ended from a live one: it forwards
	// and A drops the request.
	status, err := postEmulation(b.url+"/emulation", protocol.TypeJSON, a.node.ID(), "no-such-session", []byte(`{"id":99,"ping":{}}`))
	if err != nil || status != http.StatusNoContent {
		t.Errorf("unknown session of A through B: status %d, %v; want 204", status, err)
	}
	if r := c.call(&protocol.Command{Ping: &protocol.PingRequest{}}); r.Error != nil {
		t.Errorf("ping after a stray request: %v", r.Error)
	}
}

// controlBus joins the control channels of the nodes of one process.
type controlBus struct {
	mu       sync.Mutex
	handlers []broker.EventHandler
}

func (b *controlBus) add(h broker.EventHandler) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.handlers = append(b.handlers, h)
}

func (b *controlBus) all() []broker.EventHandler {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]broker.EventHandler(nil), b.handlers...)
}

// busBroker is a memory broker whose control messages go over a bus to
// every node; publications stay on its own node.
type busBroker struct {
	broker.Broker
	bus *controlBus
}

func (b *busBroker) Run(h broker.EventHandler) error {
	b.bus.add(h)
	return b.Broker.Run(h)
}

func (b *busBroker) PublishControl(data []byte, nodeID string) error {
	for _, h := range b.bus.all() {
		if err := h.HandleControl(data); err != nil {
			return err
		}
	}
	return nil
}

func newBusServer(t *testing.T, bus *controlBus) *transportServer {
	t.Helper()
	mb, err := memory.NewBroker(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := gyre.NewNode(gyre.Config{
		Broker:   &busBroker{Broker: mb, bus: bus},
		Channels: streamChannels,
		Token:    token.Config{HMACSecretKey: testSecret},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(transportMux(n, transportOptions{}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
		srv.Close()
	})
	return &transportServer{node: n, url: srv.URL}
}

// TestCORS: allowed origins get CORS headers and preflight answers on
// every HTTP transport, others get 403.
func TestCORS(t *testing.T) {
	s := newTransportServer(t, gyre.Config{}, transportOptions{allowedOrigins: []string{"https://good.example"}})
	tests := []struct {
		name, method, path, origin string
		want                       int
		allowMethod                string
	}{
		{"preflight emulation", http.MethodOptions, "/emulation", "https://good.example", http.StatusNoContent, "POST"},
		{"preflight http_stream", http.MethodOptions, "/connection/http_stream", "https://good.example", http.StatusNoContent, "POST"},
		{"preflight uni_http_stream", http.MethodOptions, "/connection/uni_http_stream", "https://good.example", http.StatusNoContent, "POST"},
		{"preflight uni_sse", http.MethodOptions, "/connection/uni_sse", "https://good.example", http.StatusNoContent, "POST"},
		{"preflight from elsewhere", http.MethodOptions, "/emulation", "https://evil.example", http.StatusForbidden, ""},
		{"emulation from elsewhere", http.MethodPost, "/emulation", "https://evil.example", http.StatusForbidden, ""},
		{"sse from elsewhere", http.MethodGet, "/connection/sse?cf_connect=%7B%7D", "https://evil.example", http.StatusForbidden, ""},
		{"allowed origin, bad request", http.MethodPost, "/emulation", "https://good.example", http.StatusBadRequest, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, s.url+tt.path, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Origin", tt.origin)
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "content-type")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
			allowOrigin := resp.Header.Get("Access-Control-Allow-Origin")
			if tt.want == http.StatusForbidden {
				if allowOrigin != "" {
					t.Errorf("refused origin got Access-Control-Allow-Origin %q", allowOrigin)
				}
				return
			}
			if allowOrigin != tt.origin || resp.Header.Get("Access-Control-Allow-Credentials") != "true" {
				t.Errorf("Access-Control-Allow-Origin %q, credentials %q", allowOrigin, resp.Header.Get("Access-Control-Allow-Credentials"))
			}
			if tt.allowMethod != "" {
				if !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), tt.allowMethod) ||
					resp.Header.Get("Access-Control-Allow-Headers") != "content-type" {
					t.Errorf("preflight headers %v", resp.Header)
				}
			}
		})
	}

	// A stream opened from an allowed origin carries the header too.
	req, _ := http.NewRequest(http.MethodGet, s.url+"/connection/uni_sse", nil)
	req.Header.Set("Origin", "https://good.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "https://good.example" {
		t.Errorf("stream: status %d, Access-Control-Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}
