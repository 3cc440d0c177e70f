package gyre_test

import (
	"bufio"
	"context"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
)

// uniWS is a raw client of the unidirectional WebSocket.
type uniWS struct {
	t    testing.TB
	conn net.Conn
}

func dialUni(t testing.TB, base, query string) *uniWS {
	t.Helper()
	u := "ws" + strings.TrimPrefix(base, "http") + "/connection/uni_websocket" + query
	conn, br, _, err := ws.Dialer{Timeout: 5 * time.Second}.Dial(context.Background(), u)
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	if br != nil {
		// The server wrote right behind its handshake answer (the connect
		// push of cf_connect): those bytes wait in the dialer's reader.
		conn = &bufferedConn{Conn: conn, r: br}
	}
	t.Cleanup(func() { conn.Close() })
	return &uniWS{t: t, conn: conn}
}

// bufferedConn reads what a reader buffered before the connection.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *uniWS) send(msg string) {
	c.t.Helper()
	if err := wsutil.WriteClientText(c.conn, []byte(msg)); err != nil {
		c.t.Fatal(err)
	}
}

// frame reads the next data frame; a close frame ends the test's reading
// with its code.
func (c *uniWS) frame() ([]byte, *wsutil.ClosedError) {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		msgs, err := wsutil.ReadServerMessage(c.conn, nil)
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		for _, m := range msgs {
			switch {
			case m.OpCode == ws.OpClose:
				code, reason := ws.ParseCloseFrameData(m.Payload)
				return nil, &wsutil.ClosedError{Code: code, Reason: reason}
			case m.OpCode.IsControl():
			default:
				if len(msgs) > 1 {
					c.t.Fatalf("%d messages read at once, the test expects one", len(msgs))
				}
				return m.Payload, nil
			}
		}
	}
}

// push reads one frame holding one push.
func (c *uniWS) push() *protocol.Push {
	c.t.Helper()
	f, closed := c.frame()
	if closed != nil {
		c.t.Fatalf("closed %d %s, want a push", closed.Code, closed.Reason)
	}
	p, err := protocol.DecodePush(protocol.TypeJSON, f)
	if err != nil {
		c.t.Fatalf("frame %q: %v", f, err)
	}
	return p
}

func (c *uniWS) waitClose() wsutil.ClosedError {
	c.t.Helper()
	for {
		_, closed := c.frame()
		if closed != nil {
			return *closed
		}
	}
}

// TestUniWebsocket: the ConnectRequest comes as the first message or in
// cf_connect; then one push per frame, and a disconnect push before the
// close frame.
func TestUniWebsocket(t *testing.T) {
	s := newTransportServer(t, gyre.Config{}, transportOptions{})
	tok := connToken(t, "lee", 0, map[string]any{"channels": []string{"news"}})
	connect := `{"token":"` + tok + `"}`
	for _, tt := range []struct {
		name  string
		query string
		first string
	}{
		{"first message", "", connect},
		{"cf_connect", "?cf_connect=" + url.QueryEscape(connect), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dialUni(t, s.url, tt.query)
			if tt.first != "" {
				c.send(tt.first)
			}
			p := c.push()
			if p.Connect == nil || p.Connect.Ping != 25 || p.Connect.Pong {
				t.Fatalf("first push %v, want connect with ping and no pong", p)
			}
			for _, d := range []string{`{"n":1}`, `{"n":2}`} {
				if _, err := s.node.Publish("news", []byte(d)); err != nil {
					t.Fatal(err)
				}
			}
			for _, want := range []string{`{"n":1}`, `{"n":2}`} {
				if p := c.push(); p.Channel != "news" || p.Pub == nil || string(p.Pub.Data) != want {
					t.Errorf("push %v, want publication %s", p, want)
				}
			}
			if err := s.node.Disconnect("lee", nil, gyre.ClientFilter{ClientID: p.Connect.Client}, nil); err != nil {
				t.Fatal(err)
			}
			if d := c.push(); d.Disconnect == nil || d.Disconnect.Code != 3503 {
				t.Errorf("push %v, want disconnect 3503", d)
			}
			if cl := c.waitClose(); cl.Code != 3503 {
				t.Errorf("close %d, want 3503", cl.Code)
			}
		})
	}
}

// TestUniWebsocketJoined puts pushes written together into one frame when
// asked to.
func TestUniWebsocketJoined(t *testing.T) {
	s := newTransportServer(t, gyre.Config{}, transportOptions{uniWebsocket: gyre.UniWebsocketConfig{JoinPushMessages: true}})
	tok := connToken(t, "max", 0, map[string]any{"channels": []string{"news"}})
	c := dialUni(t, s.url, "")
	c.send(`{"token":"` + tok + `"}`)
	if p := c.push(); p.Connect == nil {
		t.Fatalf("first push %v", p)
	}
	const n = 50
	for i := range n {
		if _, err := s.node.Publish("news", []byte(strings.Repeat("1", i+1))); err != nil {
			t.Fatal(err)
		}
	}
	var got int
	for got < n {
		f, closed := c.frame()
		if closed != nil {
			t.Fatalf("closed %v", closed)
		}
		pushes, err := protocol.DecodePushes(protocol.TypeJSON, f, nil)
		if err != nil {
			t.Fatalf("frame %q: %v", f, err)
		}
		for _, p := range pushes {
			got++
			if want := strings.Repeat("1", got); string(p.Pub.GetData()) != want {
				t.Fatalf("publication %d: %q", got, p.Pub.GetData())
			}
		}
	}
}

// TestUniWebsocketBadConnect: a first message that is not a ConnectRequest
// closes with 3501 after a disconnect push; a binary one with 3506. A
// message or frame the WebSocket layer refuses closes with the RFC 6455
// code and no push.
func TestUniWebsocketBadConnect(t *testing.T) {
	s := newTransportServer(t, gyre.Config{}, transportOptions{})
	tests := []struct {
		name   string
		send   func(c *uniWS)
		code   uint16
		pushed bool
	}{
		{"not json", func(c *uniWS) { c.send("hello") }, 3501, true},
		{"array", func(c *uniWS) { c.send("[]") }, 3501, true},
		{"binary", func(c *uniWS) { _ = wsutil.WriteClientBinary(c.conn, []byte{1, 2}) }, 3506, true},
		{"bad token", func(c *uniWS) { c.send(`{"token":"x"}`) }, 3500, true},
		{"over the size limit", func(c *uniWS) {
			_, _ = c.conn.Write(wstest.MaskedFrame(0x80|byte(ws.OpText), []byte(`{"token":"`+strings.Repeat("x", 64<<10)+`"}`)))
		}, 1009, false},
		{"unmasked", func(c *uniWS) { _, _ = c.conn.Write([]byte{0x81, 2, '{', '}'}) }, 1002, false},
		{"not UTF-8", func(c *uniWS) { c.send("{\"token\":\"\xff\"}") }, 1007, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialUni(t, s.url, "")
			tt.send(c)
			if tt.pushed {
				if p := c.push(); p.Disconnect == nil || uint16(p.Disconnect.Code) != tt.code {
					t.Errorf("push %v, want disconnect %d", p, tt.code)
				}
			}
			if cl := c.waitClose(); uint16(cl.Code) != tt.code {
				t.Errorf("close %d %s, want %d", cl.Code, cl.Reason, tt.code)
			}
		})
	}
}

// TestUniWebsocketStale closes a connection that sends no ConnectRequest.
func TestUniWebsocketStale(t *testing.T) {
	t.Parallel()
	s := newTransportServer(t, gyre.Config{StaleCloseDelay: 200 * time.Millisecond}, transportOptions{})
	c := dialUni(t, s.url, "")
	if p := c.push(); p.Disconnect == nil || p.Disconnect.Code != 3502 {
		t.Errorf("push %v, want disconnect 3502", p)
	}
	if cl := c.waitClose(); cl.Code != 3502 {
		t.Errorf("close %d, want 3502", cl.Code)
	}
}
