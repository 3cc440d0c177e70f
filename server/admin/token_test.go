package admin_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/admin"
	"github.com/gyrehq/gyre/token"
)

// TestTokenRoute: a connection token from the admin route connects a
// real WebSocket client as its user, and a subscription token lets it
// into a channel its namespace closes to clients; the HMAC key is not in
// any reply.
func TestTokenRoute(t *testing.T) {
	e := newEnv(t, admin.Config{TokenKey: testHMAC})
	tok := e.token()
	ws := httptest.NewServer(gyre.NewWebsocketHandler(e.node, gyre.WebsocketConfig{}))
	t.Cleanup(ws.Close)
	wsURL := "ws" + strings.TrimPrefix(ws.URL, "http")

	r := e.postJSON("/admin/token", tok, `{"kind":"connection","user":"alice","ttl_seconds":600,"info":{"role":"tester"}}`)
	if r.status != 200 || strings.Contains(r.body, testHMAC) {
		t.Fatalf("connection token: %d %s", r.status, r.body)
	}
	var conn struct{ Token string }
	mustJSON(t, r.body, &conn)
	v, err := token.NewVerifier(token.Config{HMACSecretKey: testHMAC})
	if err != nil {
		t.Fatal(err)
	}
	ct, err := v.VerifyConnectToken(conn.Token, false)
	if err != nil {
		t.Fatal(err)
	}
	if ct.UserID != "alice" || string(ct.Info) != `{"role":"tester"}` || ct.ExpireAt != e.clock.Now().Add(600*time.Second).Unix() {
		t.Fatalf("claims: %+v", ct)
	}

	c := wstest.Dial(t, wsURL, protocol.TypeJSON)
	rep := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: conn.Token}})
	if rep.Error != nil || rep.Connect == nil || rep.Connect.Client == "" {
		t.Fatalf("connect: %+v", rep)
	}
	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "private:room"}); r.Error == nil {
		t.Fatal("subscribed to private:room without a token")
	}
	var sub struct{ Token string }
	mustJSON(t, e.postJSON("/admin/token", tok, `{"kind":"subscription","user":"alice","channel":"private:room"}`).body, &sub)
	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "private:room", Token: sub.Token}); r.Error != nil {
		t.Fatalf("subscribe with the token: %+v", r.Error)
	}
}

func TestTokenRouteRefused(t *testing.T) {
	e := newEnv(t, admin.Config{TokenKey: testHMAC})
	tok := e.token()
	for name, body := range map[string]string{
		"kind":       `{"kind":"admin","user":"a"}`,
		"no channel": `{"kind":"subscription","user":"a"}`,
		"ttl":        `{"kind":"connection","user":"a","ttl_seconds":-1}`,
		"long ttl":   `{"kind":"connection","user":"a","ttl_seconds":99999999}`,
		"info":       `{"kind":"connection","user":"a","info":{`,
		"bad JSON":   `nope`,
	} {
		if r := e.postJSON("/admin/token", tok, body); r.status != 400 || !strings.Contains(r.body, `"error"`) {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	noKey := newEnv(t, admin.Config{})
	r := noKey.postJSON("/admin/token", noKey.token(), `{"kind":"connection","user":"a"}`)
	if r.status != 400 || !strings.Contains(r.body, "no HMAC key") {
		t.Fatalf("no key: %d %s", r.status, r.body)
	}
	if r := e.postJSON("/admin/token", "", `{"kind":"connection","user":"a"}`); r.status != 401 {
		t.Fatalf("no session: %d", r.status)
	}
}
