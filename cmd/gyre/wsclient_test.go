package main

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/token"
)

// wsClient is a raw JSON protocol client over a real WebSocket.
type wsClient struct {
	t    *testing.T
	conn net.Conn
	id   uint32

	mu      sync.Mutex
	cond    *sync.Cond
	replies map[uint32]*protocol.Reply
	pushes  []*protocol.Push
	closed  *wsutil.ClosedError
	done    chan struct{}
}

func signToken(t *testing.T, secret string, claims map[string]any) string {
	t.Helper()
	tok, err := token.SignHMAC("HS256", []byte(secret), claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// dialWS opens a WebSocket to the server at base ("http://host:port").
func dialWS(t *testing.T, base string) *wsClient {
	t.Helper()
	url := "ws" + strings.TrimPrefix(base, "http") + "/connection/websocket"
	conn, _, _, err := ws.Dialer{Timeout: 10 * time.Second}.Dial(context.Background(), url)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c := &wsClient{t: t, conn: conn, replies: map[uint32]*protocol.Reply{}, done: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	go c.readLoop()
	t.Cleanup(func() { conn.Close(); <-c.done })
	return c
}

// connect dials and connects with tok, failing on an error.
func connect(t *testing.T, base, tok string) (*wsClient, *protocol.ConnectResult) {
	t.Helper()
	c := dialWS(t, base)
	r := c.call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok, Name: "cmd-test"}})
	if r.Error != nil {
		t.Fatalf("connect: error %d %s", r.Error.Code, r.Error.Message)
	}
	return c, r.Connect
}

func (c *wsClient) readLoop() {
	defer close(c.done)
	for {
		msgs, err := wsutil.ReadServerMessage(c.conn, nil)
		if err != nil {
			c.setClosed(wsutil.ClosedError{Code: 1006, Reason: err.Error()})
			return
		}
		for _, m := range msgs {
			if m.OpCode == ws.OpClose {
				code, reason := ws.ParseCloseFrameData(m.Payload)
				c.setClosed(wsutil.ClosedError{Code: code, Reason: reason})
				return
			}
			if !m.OpCode.IsControl() {
				c.handleFrame(m.Payload)
			}
		}
	}
}

func (c *wsClient) setClosed(ce wsutil.ClosedError) {
	c.mu.Lock()
	if c.closed == nil {
		c.closed = &ce
	}
	c.cond.Broadcast()
	c.mu.Unlock()
}

func (c *wsClient) handleFrame(frame []byte) {
	replies, err := protocol.DecodeReplies(protocol.TypeJSON, frame, nil)
	if err != nil {
		c.t.Errorf("decode replies %q: %v", frame, err)
		return
	}
	ping := false
	c.mu.Lock()
	for _, r := range replies {
		switch {
		case r.Id > 0:
			c.replies[r.Id] = r
		case r.Push != nil:
			c.pushes = append(c.pushes, r.Push)
		default:
			ping = true
		}
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	if ping {
		_ = wsutil.WriteClientMessage(c.conn, ws.OpText, []byte("{}"))
	}
}

func (c *wsClient) call(cmd *protocol.Command) *protocol.Reply {
	c.t.Helper()
	c.send(cmd)
	var r *protocol.Reply
	c.waitFor("reply "+strconv.Itoa(int(cmd.Id)), func() bool {
		r = c.replies[cmd.Id]
		return r != nil
	})
	return r
}

// tryCall is call for a command the server may answer by closing the
// connection: it returns the reply or the close.
func (c *wsClient) tryCall(cmd *protocol.Command) (*protocol.Reply, *wsutil.ClosedError) {
	c.t.Helper()
	c.send(cmd)
	var r *protocol.Reply
	c.waitFor("close", func() bool {
		r = c.replies[cmd.Id]
		return r != nil || c.closed != nil
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if r != nil {
		return r, nil
	}
	return nil, c.closed
}

func (c *wsClient) send(cmd *protocol.Command) {
	c.t.Helper()
	c.mu.Lock()
	c.id++
	cmd.Id = c.id
	c.mu.Unlock()
	b, err := protocol.AppendCommand(nil, protocol.TypeJSON, cmd)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := wsutil.WriteClientMessage(c.conn, ws.OpText, b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// subscribe returns the error code of a subscribe (0 on success).
func (c *wsClient) subscribe(channel string) uint32 {
	c.t.Helper()
	r := c.call(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: channel}})
	if r.Error != nil {
		return r.Error.Code
	}
	return 0
}

func (c *wsClient) waitFor(what string, cond func() bool) {
	c.t.Helper()
	expired := false
	timer := time.AfterFunc(20*time.Second, func() {
		c.mu.Lock()
		expired = true
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for !cond() {
		if c.closed != nil && what != "close" {
			c.t.Fatalf("waiting for %s: connection closed: %d %s", what, c.closed.Code, c.closed.Reason)
		}
		if expired {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		c.cond.Wait()
	}
}

func (c *wsClient) waitPubs(channel string, n int) []*protocol.Publication {
	c.t.Helper()
	var out []*protocol.Publication
	c.waitFor(strconv.Itoa(n)+" publications in "+channel, func() bool {
		out = out[:0]
		for _, p := range c.pushes {
			if p.Channel == channel && p.Pub != nil {
				out = append(out, p.Pub)
			}
		}
		return len(out) >= n
	})
	return out
}

func (c *wsClient) waitClose() wsutil.ClosedError {
	c.t.Helper()
	c.waitFor("close", func() bool { return c.closed != nil })
	return *c.closed
}
