package grpcapi_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/grpcapi"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
	"github.com/gyrehq/gyre/token"
)

const (
	testKey    = "grpc-test-key"
	testSecret = "grpc-test-secret"
)

// testChannels: "hist:" keeps history, "pres:" presence, "plain:"
// neither; channels without namespace both; "map:" channels are maps
// with a stream; "poll:" channels are versioned shared-poll channels
// that shared_poll_publish may set, "rpoll:" ones it may not.
func testChannels() gyre.ChannelConfig {
	return gyre.ChannelConfig{
		WithoutNamespace: gyre.ChannelOptions{Presence: true, HistorySize: 100, HistoryTTL: time.Minute, AllowSubscribeForClient: true},
		Namespaces: []gyre.Namespace{
			{Name: "hist", ChannelOptions: gyre.ChannelOptions{HistorySize: 10, HistoryTTL: time.Minute, AllowSubscribeForClient: true}},
			{Name: "pres", ChannelOptions: gyre.ChannelOptions{Presence: true, AllowSubscribeForClient: true}},
			{Name: "plain", ChannelOptions: gyre.ChannelOptions{AllowSubscribeForClient: true}},
			{Name: "map", ChannelOptions: gyre.ChannelOptions{
				SubscriptionType: gyre.SubscriptionTypeMap, Map: gyre.MapChannelOptions{Mode: gyre.MapModeRecoverable, KeyTTL: time.Minute},
			}},
			{Name: "poll", ChannelOptions: gyre.ChannelOptions{
				SubscriptionType: gyre.SubscriptionTypeSharedPoll, SharedPoll: gyre.SharedPollOptions{Versioned: true, PublishEnabled: true},
			}},
			{Name: "rpoll", ChannelOptions: gyre.ChannelOptions{
				SubscriptionType: gyre.SubscriptionTypeSharedPoll, SharedPoll: gyre.SharedPollOptions{Versioned: true},
			}},
		},
	}
}

// isPollChannel tells the executor the shared-poll channels of
// testChannels, as the server tells it those of its config.
func isPollChannel(channel string) bool {
	return strings.HasPrefix(channel, "poll:") || strings.HasPrefix(channel, "rpoll:")
}

// echoRPC serves the rpc method: "echo" answers its params, "fail" an
// application error, anything else is unknown.
func echoRPC(_ context.Context, method string, params []byte) ([]byte, error) {
	switch method {
	case "echo":
		return params, nil
	case "fail":
		return nil, &gyre.Error{Code: 1001, Message: "insufficient funds"}
	case "crash":
		return nil, errors.New("backend connection refused")
	}
	return nil, &api.Error{Code: 104, Message: "not found"}
}

// env is a node with the gRPC API on a real listener and the WebSocket
// endpoint behind an httptest server.
type env struct {
	t      testing.TB
	node   *gyre.Node
	addr   string
	wsURL  string
	client apipb.CentrifugoApiClient
	conn   *grpc.ClientConn

	logs *logtest.Recorder // the executor's and the server's

	mu    sync.Mutex
	calls []call // told to OnCall
}

type call struct {
	method string
	code   uint32
}

func TestMain(m *testing.M) { enginetest.Main(m) }

// newEnv starts a node on the memory engine and the gRPC API for it,
// with cfg and an RPC hook.
func newEnv(t testing.TB, cfg grpcapi.Config) *env {
	t.Helper()
	return startEnv(t, nodeConfig(), cfg)
}

// newEnvOn is newEnv on eng.
func newEnvOn(t testing.TB, eng enginetest.Engine, cfg grpcapi.Config) *env {
	t.Helper()
	return startEnv(t, eng.Config(t, nodeConfig()), cfg)
}

func nodeConfig() gyre.Config {
	return gyre.Config{Token: token.Config{HMACSecretKey: testSecret}, Channels: testChannels()}
}

func startEnv(t testing.TB, ncfg gyre.Config, cfg grpcapi.Config) *env {
	t.Helper()
	n, err := gyre.NewNode(ncfg)
	if err != nil {
		t.Fatal(err)
	}
	// The shared-poll namespaces need these to run; the API only sets
	// keys, so nothing is ever polled or tracked here.
	n.OnSharedPollRefresh(func(context.Context, gyre.SharedPollRefreshEvent) (gyre.SharedPollRefreshReply, error) {
		return gyre.SharedPollRefreshReply{}, nil
	})
	n.OnTrack(func(context.Context, *gyre.Client, gyre.TrackEvent) (gyre.TrackReply, error) {
		return gyre.TrackReply{}, gyre.ErrorPermissionDenied
	})
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, node: n, logs: &logtest.Recorder{}}
	log := slog.New(e.logs)
	exec := api.NewExecutor(n, api.Config{RPC: echoRPC, MaxBatchSize: 1000, Logger: log, SharedPoll: isPollChannel})
	cfg.Logger = log
	cfg.OnCall = func(method string, code uint32, _ time.Duration) {
		e.mu.Lock()
		e.calls = append(e.calls, call{method, code})
		e.mu.Unlock()
	}
	srv := grpcapi.NewServer(exec, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	ws := httptest.NewServer(gyre.NewWebsocketHandler(n, gyre.WebsocketConfig{}))
	e.addr = ln.Addr().String()
	e.wsURL = "ws" + strings.TrimPrefix(ws.URL, "http")
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	e.conn = conn
	e.client = apipb.NewCentrifugoApiClient(conn)
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		ws.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	return e
}

// ctx is a call context carrying the test key.
func (e *env) ctx() context.Context {
	return withKey(e.t.Context(), testKey)
}

func withKey(ctx context.Context, key string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "apikey "+key)
}

// dial connects a WebSocket client of user.
func (e *env) dial(user string) *wstest.Client {
	e.t.Helper()
	return e.dialProto(user, protocol.TypeJSON)
}

// dialProto connects a WebSocket client of user speaking proto.
func (e *env) dialProto(user string, proto protocol.Type) *wstest.Client {
	e.t.Helper()
	c := wstest.Dial(e.t, e.wsURL, proto)
	tok, err := token.SignHMAC("HS256", []byte(testSecret), map[string]any{"sub": user, "exp": time.Now().Add(time.Hour).Unix()})
	if err != nil {
		e.t.Fatal(err)
	}
	r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok, Name: "grpc-test"}})
	if r.Error != nil {
		e.t.Fatalf("connect: %d %s", r.Error.Code, r.Error.Message)
	}
	return c
}

// called returns what OnCall was told so far.
func (e *env) called() []call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]call(nil), e.calls...)
}

// wantErr fails unless got is the API error code.
func wantErr(t *testing.T, what string, got *apipb.Error, code uint32) {
	t.Helper()
	if got == nil || got.GetCode() != code {
		t.Fatalf("%s: error %v, want code %d", what, got, code)
	}
}

// noErr fails on a call's transport error or API error.
func noErr(t *testing.T, what string, err error, apiErr *apipb.Error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if apiErr != nil {
		t.Fatalf("%s: API error %d %s", what, apiErr.GetCode(), apiErr.GetMessage())
	}
}
