package sdk

import (
	"testing"

	"github.com/centrifugal/centrifuge-go"
	"github.com/golang-jwt/jwt/v5"
)

func TestConnectWithValidToken(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		c := newClient(t, cd, clientOptions{user: "alice"})
		ev := c.connect(t)
		if ev.ClientID == "" {
			t.Fatalf("connected event without a client ID: %+v", ev)
		}
		if ev.Version == "" {
			t.Errorf("connected event without the server version: %+v", ev)
		}
		if st := c.State(); st != centrifuge.StateConnected {
			t.Fatalf("state %s after the connected event, want %s", st, centrifuge.StateConnected)
		}
	})
}

func TestTokenOfAnotherKeyDisconnects3500WithoutReconnect(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		bad := token(t, jwt.MapClaims{"sub": "alice"}, "not-the-server-secret-0123456789abcdef")
		c := newClient(t, cd, clientOptions{token: bad})
		if err := c.Connect(); err != nil {
			t.Fatalf("connect: %v", err)
		}
		c.disconnectedForGood(t, 3500)
		if n := len(c.connecting.since(0)); n != 1 {
			t.Fatalf("%d connecting events, want only the first: the client must not reconnect after 3500: %s", n, show(c.connecting.since(0)))
		}
		if got := c.connected.since(0); len(got) != 0 {
			t.Fatalf("a client with a bad token got connected: %s", show(got))
		}
	})
}
