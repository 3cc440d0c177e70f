package hooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gyrehq/gyre/internal/condwait"
	"github.com/gyrehq/gyre/server/hooks/hookspb"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
)

// gotEvent is an event as the backend read it.
type gotEvent struct {
	ID      string          `json:"id"`
	Channel string          `json:"channel"`
	User    string          `json:"user"`
	Type    string          `json:"type"`
	TimeMs  int64           `json:"time_ms"`
	Info    json.RawMessage `json:"info"`
	B64Info string          `json:"b64info"`
}

// key is the channel or user of the event.
func (e gotEvent) key() string { return e.Channel + e.User }

// request is one request the backend received.
type request struct {
	kind   Kind
	events []gotEvent
	header http.Header // HTTP headers, or the gRPC metadata
	body   []byte      // HTTP only
}

// reply is how the backend answers one request.
type reply struct {
	// status: HTTP status; a gRPC backend answers anything but 200 (and
	// 0, meaning 200) with codes.Internal.
	status int
	// body of an HTTP reply; "" means "{}".
	body string
	// refuse sets the reply's error (gRPC) or is the body
	// {"error":{...}} (HTTP).
	refuse string
	// hold: the backend answers only once it is closed, or when the
	// request ends first (its client gave up).
	hold <-chan struct{}
}

// backend is an application backend serving both HTTP and gRPC on real
// listeners. It records every request before answering it, so that a
// request that failed afterwards shows what was sent twice.
type backend struct {
	t      *testing.T
	secret []byte

	mu       sync.Mutex
	cond     *sync.Cond
	requests []request
	answer   func(i int, r request) reply // i counts requests from 0

	httpSrv *http.Server
	grpcSrv *grpc.Server
	ln      net.Listener
	addr    string
	proto   string // "http" or "grpc"
}

var backends atomic.Uint32

// loopback returns an address of the loopback network (Linux answers all
// of 127.0.0.0/8) that no other backend of this process listens on. A
// backend that goes down frees its port, which the kernel may hand to
// another test's listener while the first test's clients still dial it:
// on an address of its own, they reach nothing but their own backend.
func loopback() string {
	n := backends.Add(1)
	return fmt.Sprintf("127.%d.%d.%d", 1+os.Getpid()%250, 1+n/250%250, 1+n%250)
}

// newBackend starts a backend speaking proto ("http" or "grpc") on a
// free port.
func newBackend(t *testing.T, proto string, secret []byte) *backend {
	t.Helper()
	b := &backend{t: t, proto: proto, secret: secret}
	b.cond = sync.NewCond(&b.mu)
	b.answer = func(int, request) reply { return reply{} }
	ln, err := net.Listen("tcp", loopback()+":0")
	if err != nil {
		t.Fatal(err)
	}
	b.addr = ln.Addr().String()
	b.serve(ln)
	t.Cleanup(b.stop)
	return b
}

func (b *backend) serve(ln net.Listener) {
	b.ln = ln
	if b.proto == "grpc" {
		gs := grpc.NewServer()
		proxypb.RegisterCentrifugoProxyServer(gs, &grpcChannels{b: b})
		hookspb.RegisterUserStatusServer(gs, &grpcUsers{b: b})
		b.grpcSrv = gs
		go func() { _ = gs.Serve(ln) }()
		return
	}
	hs := &http.Server{Handler: http.HandlerFunc(b.serveHTTP)}
	b.httpSrv = hs
	go func() { _ = hs.Serve(ln) }()
}

// stop takes the backend down: its port refuses connections.
func (b *backend) stop() {
	if b.grpcSrv != nil {
		b.grpcSrv.Stop()
		b.grpcSrv = nil
	}
	if b.httpSrv != nil {
		_ = b.httpSrv.Close()
		b.httpSrv = nil
	}
}

// restart brings the backend up again on the same port.
func (b *backend) restart() {
	b.t.Helper()
	var ln net.Listener
	var err error
	// The port was just released; another process may not take it in
	// between, but the kernel may need a moment.
	for range 100 {
		if ln, err = net.Listen("tcp", b.addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		b.t.Fatalf("relisten on %s: %v", b.addr, err)
	}
	b.serve(ln)
}

// setAnswer sets how the backend answers; i counts requests from 0.
func (b *backend) setAnswer(f func(i int, r request) reply) {
	b.mu.Lock()
	b.answer = f
	b.mu.Unlock()
}

// answerFirst makes the backend answer its first request with first, and
// every later one with {}.
func (b *backend) answerFirst(first reply) {
	b.setAnswer(func(i int, _ request) reply {
		if i == 0 {
			return first
		}
		return reply{}
	})
}

// record keeps r and returns how to answer it.
func (b *backend) record(r request) reply {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := len(b.requests)
	b.requests = append(b.requests, r)
	b.cond.Broadcast()
	return b.answer(i, r)
}

// received returns the requests so far.
func (b *backend) received() []request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]request(nil), b.requests...)
}

// waitRequests waits until at least n requests came.
func (b *backend) waitRequests(n int) []request {
	b.t.Helper()
	if !condwait.Until(b.cond, 10*time.Second, func() bool { return len(b.requests) >= n }) {
		b.t.Fatalf("backend: %d requests, want %d", len(b.received()), n)
	}
	return b.received()
}

// endpoint is the Sender endpoint of the backend.
func (b *backend) endpoint() string {
	if b.proto == "grpc" {
		return "grpc://" + b.addr
	}
	return "http://" + b.addr + "/hooks"
}

// wait applies a reply's hold; false when the request ended first.
func wait(ctx context.Context, a reply) bool {
	if a.hold != nil {
		select {
		case <-a.hold:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

func (b *backend) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/hooks" || r.Header.Get("Content-Type") != "application/json" {
		b.t.Errorf("backend: %s %s with Content-Type %q", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
	if b.secret != nil {
		if err := checkSignature(r.Header.Get("X-Gyre-Signature"), body, b.secret); err != nil {
			b.t.Errorf("backend: %v", err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
	}
	var env struct {
		Events []gotEvent `json:"events"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		b.t.Errorf("backend: body %q: %v", body, err)
	}
	req := request{events: env.Events, header: r.Header.Clone(), body: body, kind: KindChannel}
	if len(env.Events) > 0 && env.Events[0].User != "" {
		req.kind = KindUser
	}
	a := b.record(req)
	if !wait(r.Context(), a) {
		return
	}
	switch {
	case a.status != 0 && a.status != http.StatusOK:
		w.WriteHeader(a.status)
	case a.refuse != "":
		_, _ = io.WriteString(w, `{"error":{"code":1000,"message":`+strconv.Quote(a.refuse)+`}}`)
	case a.body != "":
		_, _ = io.WriteString(w, a.body)
	default:
		_, _ = io.WriteString(w, "{}")
	}
}

// checkSignature verifies the signature header the way the package
// documentation tells a backend to, written apart from VerifySignature so
// that the two check each other.
func checkSignature(header string, body, secret []byte) error {
	var t, v1 string
	for _, kv := range strings.Split(header, ",") {
		switch k, v, _ := strings.Cut(kv, "="); k {
		case "t":
			t = v
		case "v1":
			v1 = v
		}
	}
	sec, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return errors.New("signature: no t")
	}
	if d := time.Since(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("signature: t too far from now")
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(t + "." + string(body)))
	got, err := hex.DecodeString(v1)
	if err != nil || !hmac.Equal(got, m.Sum(nil)) {
		return errors.New("signature: v1 does not match " + header)
	}
	return nil
}

// grpcHeader turns incoming metadata into headers, for request.header.
func grpcHeader(ctx context.Context) http.Header {
	h := http.Header{}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, vs := range md {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return h
}

// grpcStatus is the gRPC error of a reply's status, nil for none.
func grpcStatus(a reply) error {
	if a.status != 0 && a.status != http.StatusOK {
		return status.Errorf(codes.Internal, "status %d", a.status)
	}
	return nil
}

type grpcChannels struct {
	proxypb.UnimplementedCentrifugoProxyServer
	b *backend
}

func (g *grpcChannels) NotifyChannelState(ctx context.Context, in *proxypb.NotifyChannelStateRequest) (*proxypb.NotifyChannelStateResponse, error) {
	req := request{kind: KindChannel, header: grpcHeader(ctx)}
	for _, e := range in.Events {
		req.events = append(req.events, gotEvent{ID: e.Id, Channel: e.Channel, Type: e.Type, TimeMs: e.TimeMs})
	}
	a := g.b.record(req)
	if !wait(ctx, a) {
		// The server may see the deadline before the client does: no
		// answer must reach the client as a success.
		return nil, status.Error(codes.DeadlineExceeded, "held past the deadline")
	}
	if err := grpcStatus(a); err != nil {
		return nil, err
	}
	resp := &proxypb.NotifyChannelStateResponse{Result: &proxypb.NotifyChannelStateResult{}}
	if a.refuse != "" {
		resp = &proxypb.NotifyChannelStateResponse{Error: &proxypb.Error{Code: 1000, Message: a.refuse}}
	}
	return resp, nil
}

type grpcUsers struct {
	hookspb.UnimplementedUserStatusServer
	b *backend
}

func (g *grpcUsers) NotifyUserStatus(ctx context.Context, in *hookspb.NotifyUserStatusRequest) (*hookspb.NotifyUserStatusResponse, error) {
	req := request{kind: KindUser, header: grpcHeader(ctx)}
	for _, e := range in.Events {
		req.events = append(req.events, gotEvent{ID: e.Id, User: e.User, Type: e.Type, TimeMs: e.TimeMs, Info: e.Info})
	}
	a := g.b.record(req)
	if !wait(ctx, a) {
		return nil, status.Error(codes.DeadlineExceeded, "held past the deadline")
	}
	if err := grpcStatus(a); err != nil {
		return nil, err
	}
	resp := &hookspb.NotifyUserStatusResponse{Result: &hookspb.NotifyUserStatusResult{}}
	if a.refuse != "" {
		resp = &hookspb.NotifyUserStatusResponse{Error: &hookspb.Error{Code: 1000, Message: a.refuse}}
	}
	return resp, nil
}

// newSender returns a Sender for the backend; cfg's Endpoint and
// GRPCConn are filled in.
func (b *backend) newSender(cfg SenderConfig) Sender {
	b.t.Helper()
	cfg.Endpoint = b.endpoint()
	if b.proto == "grpc" {
		// Reconnect quickly once a stopped backend is back.
		bo := backoff.DefaultConfig
		bo.BaseDelay, bo.MaxDelay = 10*time.Millisecond, 50*time.Millisecond
		conn, err := grpc.NewClient(b.addr,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: time.Second}))
		if err != nil {
			b.t.Fatal(err)
		}
		b.t.Cleanup(func() { _ = conn.Close() })
		cfg.GRPCConn = conn
	}
	s, err := NewSender(cfg)
	if err != nil {
		b.t.Fatal(err)
	}
	return s
}

// protos runs f for an HTTP and a gRPC backend.
func protos(t *testing.T, f func(t *testing.T, proto string)) {
	for _, p := range []string{"http", "grpc"} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			f(t, p)
		})
	}
}
