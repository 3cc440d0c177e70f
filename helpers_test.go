package gyre_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/token"
)

const testSecret = "test-secret"

// testDeflate, set by GYRE_TEST_DEFLATE=1, runs every test's WebSocket
// clients with permessage-deflate, on servers that accept it: what the
// engine promises must hold through compressed connections too.
// scripts/test runs the package once this way.
var testDeflate = os.Getenv("GYRE_TEST_DEFLATE") == "1"

// newTestNode starts a node with the given config (token secret filled in)
// behind an httptest server and returns the WebSocket URL.
func newTestNode(t *testing.T, cfg gyre.Config) (*gyre.Node, string) {
	t.Helper()
	return newTestNodeWith(t, cfg, nil)
}

// newTestNodeWith is newTestNode with a chance to register handlers
// before the node runs.
func newTestNodeWith(t *testing.T, cfg gyre.Config, setup func(n *gyre.Node)) (*gyre.Node, string) {
	t.Helper()
	return newTestNodeWS(t, cfg, gyre.WebsocketConfig{Compression: testDeflate}, setup)
}

// newTestNodeWS is newTestNodeWith with the WebSocket handler's settings.
func newTestNodeWS(t *testing.T, cfg gyre.Config, ws gyre.WebsocketConfig, setup func(n *gyre.Node)) (*gyre.Node, string) {
	t.Helper()
	if cfg.Token.HMACSecretKey == "" {
		cfg.Token.HMACSecretKey = testSecret
	}
	n, err := gyre.NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(n)
	}
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/connection/websocket", gyre.NewWebsocketHandler(n, ws))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
		srv.Close()
	})
	return n, "ws" + strings.TrimPrefix(srv.URL, "http") + "/connection/websocket"
}

func connToken(t testing.TB, user string, ttl time.Duration, extra map[string]any) string {
	t.Helper()
	claims := map[string]any{"sub": user}
	if ttl > 0 {
		claims["exp"] = time.Now().Add(ttl).Unix()
	}
	for k, v := range extra {
		claims[k] = v
	}
	tok, err := token.SignHMAC("HS256", []byte(testSecret), claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// testClient is a raw protocol client with the connect step these tests
// share.
type testClient struct {
	*wstest.Client
	t testing.TB
}

func dial(t testing.TB, url string, proto protocol.Type, opts ...wstest.Option) *testClient {
	t.Helper()
	if testDeflate {
		opts = append(opts, wstest.Deflate())
	}
	return &testClient{Client: wstest.Dial(t, url, proto, opts...), t: t}
}

func (c *testClient) connect(tok string) *protocol.ConnectResult {
	c.t.Helper()
	r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok, Name: "test"}})
	if r.Error != nil {
		c.t.Fatalf("connect: error %d %s", r.Error.Code, r.Error.Message)
	}
	return r.Connect
}

// publishMany publishes items into channel in one Node.PublishMany.
func publishMany(n *gyre.Node, channel string, items []gyre.PublishItem) {
	for i := range items {
		items[i].Channel = channel
	}
	n.PublishMany(items)
}
