package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/token"
)

const (
	testSecret = "api-test-secret"
	testKey    = "api-test-key"
)

// testChannels: "hist:" keeps history, "pres:" keeps presence, "plain:"
// has neither; channels without namespace have both; "wild:" allows
// wildcard subscriptions. "map:" channels are maps whose keys live until
// removed, "emap:" maps whose keys expire, with no stream. "poll:"
// channels are versioned shared-poll channels that shared_poll_publish
// may set, "vpoll:" versionless ones and "rpoll:" versioned ones without
// publish_enabled.
func testChannels() gyre.ChannelConfig {
	full := gyre.ChannelOptions{
		Presence: true, HistorySize: 100, HistoryTTL: time.Minute,
		AllowSubscribeForClient: true, JoinLeave: true,
	}
	return gyre.ChannelConfig{
		WithoutNamespace: full,
		Namespaces: []gyre.Namespace{
			{Name: "hist", ChannelOptions: gyre.ChannelOptions{HistorySize: 10, HistoryTTL: time.Minute, AllowSubscribeForClient: true}},
			{Name: "pres", ChannelOptions: gyre.ChannelOptions{Presence: true, AllowSubscribeForClient: true}},
			{Name: "plain", ChannelOptions: gyre.ChannelOptions{AllowSubscribeForClient: true}},
			{Name: "wild", ChannelOptions: gyre.ChannelOptions{AllowSubscribeForClient: true, AllowWildcardSubscriptions: true, HistorySize: 10, HistoryTTL: time.Minute}},
			{Name: "map", ChannelOptions: gyre.ChannelOptions{
				SubscriptionType: gyre.SubscriptionTypeMap, AllowSubscribeForClient: true,
				Map: gyre.MapChannelOptions{Mode: gyre.MapModePersistent},
			}},
			{Name: "emap", ChannelOptions: gyre.ChannelOptions{
				SubscriptionType: gyre.SubscriptionTypeMap, AllowSubscribeForClient: true,
				Map: gyre.MapChannelOptions{Mode: gyre.MapModeEphemeral, KeyTTL: time.Minute},
			}},
			{Name: "poll", ChannelOptions: gyre.ChannelOptions{
				SubscriptionType: gyre.SubscriptionTypeSharedPoll,
				SharedPoll:       gyre.SharedPollOptions{Versioned: true, PublishEnabled: true},
			}},
			{Name: "vpoll", ChannelOptions: gyre.ChannelOptions{SubscriptionType: gyre.SubscriptionTypeSharedPoll}},
			{Name: "rpoll", ChannelOptions: gyre.ChannelOptions{
				SubscriptionType: gyre.SubscriptionTypeSharedPoll, SharedPoll: gyre.SharedPollOptions{Versioned: true},
			}},
		},
	}
}

// sharedPollHandlers sets the handlers the shared-poll namespaces of
// testChannels need to run. The API only sets keys, so nothing is ever
// polled or tracked here.
func sharedPollHandlers(n *gyre.Node) {
	n.OnSharedPollRefresh(func(context.Context, gyre.SharedPollRefreshEvent) (gyre.SharedPollRefreshReply, error) {
		return gyre.SharedPollRefreshReply{}, nil
	})
	n.OnTrack(func(context.Context, *gyre.Client, gyre.TrackEvent) (gyre.TrackReply, error) {
		return gyre.TrackReply{}, gyre.ErrorPermissionDenied
	})
}

// env is a node with the API and the WebSocket endpoint behind one
// httptest server.
type env struct {
	t       testing.TB
	node    *gyre.Node
	handler *api.Handler
	srv     *httptest.Server
	wsURL   string
}

func newEnv(t testing.TB, cfg api.Config) *env {
	t.Helper()
	return newEnvWith(t, cfg, gyre.Config{})
}

// newEnvWith is newEnv on a node with what ncfg sets besides the token
// and the channels (a MapBroker, say).
func newEnvWith(t testing.TB, cfg api.Config, ncfg gyre.Config) *env {
	t.Helper()
	ncfg.Token = token.Config{HMACSecretKey: testSecret}
	ncfg.Channels = testChannels()
	n, err := gyre.NewNode(ncfg)
	if err != nil {
		t.Fatal(err)
	}
	sharedPollHandlers(n)
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	if cfg.Key == "" && !cfg.Insecure {
		cfg.Key = testKey
	}
	mux := http.NewServeMux()
	h := api.NewHandler(n, cfg)
	// As the server mounts it: the legacy form is POST /api.
	mux.Handle("/api/", h)
	mux.Handle("/api", h)
	mux.Handle("/connection/websocket", gyre.NewWebsocketHandler(n, gyre.WebsocketConfig{}))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
		srv.Close()
	})
	return &env{t: t, node: n, handler: h, srv: srv, wsURL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/connection/websocket"}
}

// post sends body to /api/<method> with the test key and returns the
// status and the response body.
func (e *env) post(method, body string, header ...string) (int, []byte) {
	e.t.Helper()
	return e.postPath("/api/"+method, body, header...)
}

// postPath is post to any path of the server.
func (e *env) postPath(path, body string, header ...string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("X-API-Key", testKey)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(e.t, req)
}

func do(t testing.TB, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// apiReply is the envelope of a method's answer.
type apiReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    uint32 `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// call posts and decodes the result into out, failing on an error reply.
func (e *env) call(method, body string, out any) {
	e.t.Helper()
	status, b := e.post(method, body)
	if status != http.StatusOK {
		e.t.Fatalf("%s: status %d: %s", method, status, b)
	}
	var r apiReply
	if err := json.Unmarshal(b, &r); err != nil {
		e.t.Fatalf("%s: decode %q: %v", method, b, err)
	}
	if r.Error != nil {
		e.t.Fatalf("%s: error %d %s", method, r.Error.Code, r.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			e.t.Fatalf("%s: decode result %q: %v", method, r.Result, err)
		}
	}
}

// callErr posts and returns the error code of the reply (0 for success).
func (e *env) callErr(method, body string) uint32 {
	e.t.Helper()
	status, b := e.post(method, body)
	if status != http.StatusOK {
		e.t.Fatalf("%s: status %d: %s", method, status, b)
	}
	var r apiReply
	if err := json.Unmarshal(b, &r); err != nil {
		e.t.Fatalf("%s: decode %q: %v", method, b, err)
	}
	if r.Error == nil {
		return 0
	}
	return r.Error.Code
}

func connToken(t testing.TB, user string) string {
	t.Helper()
	tok, err := token.SignHMAC("HS256", []byte(testSecret), map[string]any{"sub": user, "exp": time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// dial connects a client of user and waits for its connect result.
func (e *env) dial(user string) (*wstest.Client, *protocol.ConnectResult) {
	e.t.Helper()
	c := wstest.Dial(e.t, e.wsURL, protocol.TypeJSON)
	r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: connToken(e.t, user), Name: "api-test"}})
	if r.Error != nil {
		e.t.Fatalf("connect: %d %s", r.Error.Code, r.Error.Message)
	}
	return c, r.Connect
}

// jsonEq reports whether two JSON texts hold the same value.
func jsonEq(t *testing.T, got []byte, want string) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("decode %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatalf("decode want %q: %v", want, err)
	}
	ga, _ := json.Marshal(a)
	gb, _ := json.Marshal(b)
	if !bytes.Equal(ga, gb) {
		t.Fatalf("got %s, want %s", got, want)
	}
}
