package main

import (
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/token"
)

// wsWaitLimit leaves room for a whole gyre process to react.
const wsWaitLimit = 20 * time.Second

func signToken(t *testing.T, secret string, claims map[string]any) string {
	t.Helper()
	tok, err := token.SignHMAC("HS256", []byte(secret), claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// dialWS opens a JSON WebSocket to the server at base ("http://host:port").
func dialWS(t *testing.T, base string) *wstest.Client {
	t.Helper()
	url := "ws" + strings.TrimPrefix(base, "http") + "/connection/websocket"
	return wstest.Dial(t, url, protocol.TypeJSON, wstest.WaitLimit(wsWaitLimit))
}

// connect dials and connects with tok, failing on an error.
func connect(t *testing.T, base, tok string) (*wstest.Client, *protocol.ConnectResult) {
	t.Helper()
	c := dialWS(t, base)
	r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok, Name: "cmd-test"}})
	if r.Error != nil {
		t.Fatalf("connect: error %d %s", r.Error.Code, r.Error.Message)
	}
	return c, r.Connect
}

// subscribeCode returns the error code of a subscribe (0 on success).
func subscribeCode(c *wstest.Client, channel string) uint32 {
	r := c.Subscribe(&protocol.SubscribeRequest{Channel: channel})
	if r.Error != nil {
		return r.Error.Code
	}
	return 0
}
