package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/hooks/hookspb"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
	"github.com/gyrehq/gyre/token"
)

const hookSecret = "hook-secret"

// hookBackend is an application backend for the event hooks: an HTTP
// endpoint that checks every request's signature and refuses the first
// `down` requests with 503 (a backend that is down, then back), and a
// gRPC server of NotifyChannelState and NotifyUserStatus.
type hookBackend struct {
	t    *testing.T
	mu   sync.Mutex
	down int
	// requests are the events of every request, taken or refused, in
	// order; taken only those the backend took.
	requests [][]hookEvent
	refused  int
	taken    []hookEvent
	badSigs  int
	httpURL  string
	grpcAddr string
}

type hookEvent struct {
	ID      string          `json:"id"`
	Channel string          `json:"channel"`
	User    string          `json:"user"`
	Type    string          `json:"type"`
	TimeMs  int64           `json:"time_ms"`
	Info    json.RawMessage `json:"info"`
}

func newHookBackend(t *testing.T, down int) *hookBackend {
	b := &hookBackend{t: t, down: down}
	srv := httptest.NewServer(http.HandlerFunc(b.serveHTTP))
	t.Cleanup(srv.Close)
	b.httpURL = srv.URL
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	proxypb.RegisterCentrifugoProxyServer(g, &hookProxyServer{b: b})
	hookspb.RegisterUserStatusServer(g, &hookUserServer{b: b})
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	b.grpcAddr = lis.Addr().String()
	return b
}

// serveHTTP checks the signature as a backend would, by hand: HMAC-SHA256
// of "<t>.<body>" in v1.
func (b *hookBackend) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Events []hookEvent `json:"events"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		b.t.Errorf("hook body %q: %v", body, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var ts, sig string
	for _, kv := range strings.Split(r.Header.Get("X-Gyre-Signature"), ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	mac := hmac.New(sha256.New, []byte(hookSecret))
	mac.Write([]byte(ts + "." + string(body)))
	if want := hex.EncodeToString(mac.Sum(nil)); ts == "" || !hmac.Equal([]byte(sig), []byte(want)) {
		b.badSigs++
	}
	b.requests = append(b.requests, req.Events)
	if b.down > 0 {
		b.down--
		b.refused++
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	b.taken = append(b.taken, req.Events...)
	_, _ = w.Write([]byte(`{}`))
}

type hookProxyServer struct {
	proxypb.UnimplementedCentrifugoProxyServer
	b *hookBackend
}

func (s *hookProxyServer) NotifyChannelState(_ context.Context, r *proxypb.NotifyChannelStateRequest) (*proxypb.NotifyChannelStateResponse, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	for _, e := range r.Events {
		s.b.taken = append(s.b.taken, hookEvent{ID: e.Id, Channel: e.Channel, Type: e.Type, TimeMs: e.TimeMs})
	}
	return &proxypb.NotifyChannelStateResponse{Result: &proxypb.NotifyChannelStateResult{}}, nil
}

type hookUserServer struct {
	hookspb.UnimplementedUserStatusServer
	b *hookBackend
}

func (s *hookUserServer) NotifyUserStatus(_ context.Context, r *hookspb.NotifyUserStatusRequest) (*hookspb.NotifyUserStatusResponse, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	for _, e := range r.Events {
		s.b.taken = append(s.b.taken, hookEvent{ID: e.Id, User: e.User, Type: e.Type, TimeMs: e.TimeMs, Info: e.Info})
	}
	return &hookspb.NotifyUserStatusResponse{Result: &hookspb.NotifyUserStatusResult{}}, nil
}

// of returns the types of the events the backend took for a channel or a
// user (key), in order.
func (b *hookBackend) of(key string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, e := range b.taken {
		if e.Channel == key || e.User == key {
			out = append(out, e.Type)
		}
	}
	return out
}

func (b *hookBackend) waitFor(t *testing.T, key string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := b.of(key)
		if slices.Equal(got, want) {
			return
		}
		if len(got) > len(want) || time.Now().After(deadline) {
			t.Fatalf("backend got %v for %q, want %v", got, key, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hooksConfig: "room" sends its state events over HTTP (the default
// state proxy), "lobby" over gRPC (a named proxy), and user status goes
// over gRPC.
func hooksConfig(b *hookBackend) *config.Config {
	c := testConfig()
	c.Channel.Proxy.State = config.Proxy{Endpoint: b.httpURL + "/state", Timeout: time.Second}
	c.Proxies = []config.NamedProxy{{Name: "grpc-hooks", Proxy: config.Proxy{Endpoint: "grpc://" + b.grpcAddr, Timeout: time.Second}}}
	c.Client.UserStatusProxyName = "grpc-hooks"
	c.Channel.Namespaces = append(c.Channel.Namespaces,
		config.Namespace{Name: "room", ChannelOptions: config.ChannelOptions{AllowSubscribeForClient: true, StateProxyEnabled: true, StateProxyName: "default"}},
		config.Namespace{Name: "lobby", ChannelOptions: config.ChannelOptions{AllowSubscribeForClient: true, StateProxyEnabled: true, StateProxyName: "grpc-hooks"}},
	)
	c.EventHooks.VacatedDelay = 300 * time.Millisecond
	c.EventHooks.OfflineDelay = 300 * time.Millisecond
	c.EventHooks.HMACSecretKey = hookSecret
	return c
}

// TestEventHooks: channel state events over HTTP (signed) and gRPC, user
// status events over gRPC with the user's info, from a real server on
// memory and on Redis. The HTTP backend is down at first: the gRPC
// proxy's events go on meanwhile, and once it is back its events come
// again, with the same IDs, and nothing is lost. A subscriber back within
// the delay makes no event.
func TestEventHooks(t *testing.T) {
	for _, engine := range []string{"memory", "redis"} {
		t.Run(engine, func(t *testing.T) {
			b := newHookBackend(t, 1<<30)
			c := hooksConfig(b)
			if engine == "redis" {
				r := redistest.Start(t)
				c.Engine.Type = "redis"
				c.Engine.Redis.Address = []string{r.Addr}
			}
			_, base := newServer(t, c)

			tok, err := token.SignHMAC("HS256", []byte(testSecret), map[string]any{"sub": "u1", "info": map[string]string{"name": "Ann"}})
			if err != nil {
				t.Fatal(err)
			}
			cl := dial(t, base)
			if _, closed := cl.connect(tok); closed != 0 {
				t.Fatalf("connect: closed %d", closed)
			}
			cl.subscribe("room:1")
			cl.subscribe("lobby:1")
			// The HTTP backend refusing holds back its own events only.
			b.waitFor(t, "lobby:1", "occupied")
			b.waitFor(t, "u1", "online")
			cl.call(`"unsubscribe":{"channel":"lobby:1"}`)
			b.waitFor(t, "lobby:1", "occupied", "vacated")
			cl.subscribe("lobby:1")
			b.waitFor(t, "lobby:1", "occupied", "vacated", "occupied")
			b.mu.Lock()
			refused := b.refused
			b.down = 0
			b.mu.Unlock()
			if refused == 0 {
				t.Fatal("the HTTP backend refused nothing before the gRPC events came")
			}
			b.waitFor(t, "room:1", "occupied")

			// Out and back within the delay: nothing.
			cl.call(`"unsubscribe":{"channel":"room:1"}`)
			cl.subscribe("room:1")
			time.Sleep(time.Second)
			b.waitFor(t, "room:1", "occupied")

			cl.conn.Close()
			b.waitFor(t, "room:1", "occupied", "vacated")
			b.waitFor(t, "lobby:1", "occupied", "vacated", "occupied", "vacated")
			b.waitFor(t, "u1", "online", "offline")

			b.mu.Lock()
			defer b.mu.Unlock()
			if b.badSigs > 0 {
				t.Fatalf("%d requests with a bad signature", b.badSigs)
			}
			// The refused requests came again with the same events: the
			// first accepted one repeats the first refused one's IDs.
			if len(b.requests) <= b.refused || len(b.requests[b.refused]) < len(b.requests[0]) ||
				!slices.EqualFunc(b.requests[0], b.requests[b.refused][:len(b.requests[0])], func(x, y hookEvent) bool { return x.ID == y.ID }) {
				t.Fatalf("requests %v: want the refused events sent again with their IDs", b.requests)
			}
			for _, e := range b.taken {
				if e.User == "u1" && !strings.Contains(string(e.Info), "Ann") {
					t.Fatalf("user event without the token's info: %+v", e)
				}
			}
		})
	}
}
