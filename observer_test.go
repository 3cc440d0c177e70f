package gyre_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	gyre.NopObserver
	mu           sync.Mutex
	sent         map[[2]string]int // transport, kind
	connected    map[gyre.ConnInfo]int
	disconnected map[gyre.ConnInfo]int // of connected clients
	subscribed   map[string]int        // by client name
	unsubscribed map[string]int
	received     map[[2]string]int // transport, method
}

func newRecorder() *recorder {
	return &recorder{
		sent: map[[2]string]int{}, connected: map[gyre.ConnInfo]int{}, disconnected: map[gyre.ConnInfo]int{},
		subscribed: map[string]int{}, unsubscribed: map[string]int{}, received: map[[2]string]int{},
	}
}

func (r *recorder) MessagesSent(transport, kind string, n, _ int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent[[2]string{transport, kind}] += n
}

func (r *recorder) CommandReceived(transport, method string, _ int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.received[[2]string{transport, method}]++
}

func (r *recorder) Connected(c gyre.ConnInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.connected[c]++
}

func (r *recorder) Disconnected(c gyre.ConnInfo, _ uint32, connected bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if connected {
		r.disconnected[c]++
	}
}

func (r *recorder) Subscribed(c gyre.ConnInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subscribed[c.Client]++
}

func (r *recorder) Unsubscribed(c gyre.ConnInfo, _ uint32, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unsubscribed[c.Client]++
}

// TestObserverByTransport: a fan-out to clients of several transports is
// reported per transport, with the SDK names the clients gave; a Tail's
// hidden subscriber is not reported; every connection and subscription
// counted at its start is counted at its end.
func TestObserverByTransport(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	s := newTransportServer(t, gyre.Config{Observer: rec}, transportOptions{})
	ws := dial(t, "ws"+s.url[len("http"):]+"/connection/websocket", protocol.TypeJSON)
	if r := ws.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: connToken(t, "amy", 0, nil), Name: "js", Version: "5.0"}}); r.Error != nil {
		t.Fatalf("connect: error %d", r.Error.Code)
	}
	ws.MustSubscribe("news")
	sse := openStream(t, s.url, "sse", protocol.TypeJSON,
		&protocol.Command{Id: 1, Connect: &protocol.ConnectRequest{Token: connToken(t, "ben", 0, nil), Name: "my-app"}},
		&protocol.Command{Id: 2, Subscribe: &protocol.SubscribeRequest{Channel: "news"}})
	sse.waitReply(2)
	uni := openUni(t, s.url, "uni_http_stream", `{"token":"`+connToken(t, "cat", 0, map[string]any{"channels": []string{"news"}})+`"}`, true)
	if p, _ := uni.next(); p.Connect == nil {
		t.Fatalf("first push %v, want connect", p)
	}
	tailed := make(chan struct{}, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := s.node.Tail(ctx, "news", func(string, *gyre.Publication) { tailed <- struct{}{} }); err != nil {
		t.Fatal(err)
	}

	for range 2 {
		if _, err := s.node.Publish("news", []byte(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	ws.WaitPubs("news", 2)
	sse.waitFor("2 publications", func() bool { return len(pubsOf(sse.pushes, "news")) == 2 })
	uni.nextNonPing()
	uni.nextNonPing()
	<-tailed
	<-tailed

	rec.mu.Lock()
	for _, tr := range []string{"websocket", "sse", "uni_http_stream"} {
		if n := rec.sent[[2]string{tr, "push_publication"}]; n != 2 {
			t.Errorf("%s: %d publications reported, want 2", tr, n)
		}
	}
	for k := range rec.sent {
		if k[0] != "websocket" && k[0] != "sse" && k[0] != "uni_http_stream" {
			t.Errorf("messages reported for transport %q", k[0])
		}
	}
	if n := rec.sent[[2]string{"websocket", "subscribe"}]; n != 1 {
		t.Errorf("%d subscribe replies reported on websocket, want 1", n)
	}
	if n := rec.received[[2]string{"sse", "subscribe"}]; n != 1 {
		t.Errorf("%d subscribe commands reported on sse, want 1", n)
	}
	for _, c := range []gyre.ConnInfo{
		{Transport: "websocket", Client: "js", Versioned: true},
		{Transport: "sse", Client: "unregistered"},
		{Transport: "uni_http_stream", Client: "unnamed"},
	} {
		if n := rec.connected[c]; n != 1 {
			t.Errorf("%+v connected %d times, want 1", c, n)
		}
	}
	if len(rec.connected) != 3 {
		t.Errorf("connections reported: %v, want 3", rec.connected)
	}
	if n := rec.subscribed["js"] + rec.subscribed["unregistered"] + rec.subscribed["unnamed"]; n != 3 {
		t.Errorf("subscriptions reported: %v, want 3 (the tail's is hidden)", rec.subscribed)
	}
	rec.mu.Unlock()

	// Every end is counted once its connection is gone.
	shutdown, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if err := s.node.Shutdown(shutdown); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for c, n := range rec.connected {
		if d := rec.disconnected[c]; d != n {
			t.Errorf("%+v: %d connected, %d disconnected", c, n, d)
		}
	}
	for name, n := range rec.subscribed {
		if u := rec.unsubscribed[name]; u != n {
			t.Errorf("%s: %d subscribed, %d unsubscribed", name, n, u)
		}
	}
}

// pubsOf are the publications in channel among pushes.
func pubsOf(pushes []*protocol.Push, channel string) []*protocol.Publication {
	var out []*protocol.Publication
	for _, p := range pushes {
		if p.Pub != nil && p.Channel == channel {
			out = append(out, p.Pub)
		}
	}
	return out
}
