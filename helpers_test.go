package gyre_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/token"
)

const testSecret = "test-secret"

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
	mux.Handle("/connection/websocket", gyre.NewWebsocketHandler(n, gyre.WebsocketConfig{}))
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

// testClient is a raw protocol client over a real WebSocket.
type testClient struct {
	t     testing.TB
	conn  net.Conn
	proto protocol.Type
	id    uint32

	mu      sync.Mutex
	replies map[uint32]*protocol.Reply
	pushes  []*protocol.Push
	pings   int
	closed  *wsutil.ClosedError
	cond    *sync.Cond
	done    chan struct{}
	noPong  bool
}

func dial(t testing.TB, url string, proto protocol.Type) *testClient {
	t.Helper()
	d := ws.Dialer{Timeout: 5 * time.Second}
	if proto == protocol.TypeProtobuf {
		d.Protocols = []string{"centrifuge-protobuf"}
	}
	conn, _, _, err := d.Dial(context.Background(), url)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c := &testClient{t: t, conn: conn, proto: proto, replies: map[uint32]*protocol.Reply{}, done: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	go c.readLoop()
	t.Cleanup(func() { conn.Close(); <-c.done })
	return c
}

func (c *testClient) readLoop() {
	defer close(c.done)
	for {
		msgs, err := wsutil.ReadServerMessage(c.conn, nil)
		if err != nil {
			c.mu.Lock()
			if ce, ok := err.(wsutil.ClosedError); ok {
				c.closed = &ce
			} else if c.closed == nil {
				c.closed = &wsutil.ClosedError{Code: 1006, Reason: err.Error()}
			}
			c.cond.Broadcast()
			c.mu.Unlock()
			return
		}
		for _, m := range msgs {
			if m.OpCode.IsControl() {
				if m.OpCode == ws.OpClose {
					code, reason := ws.ParseCloseFrameData(m.Payload)
					c.mu.Lock()
					c.closed = &wsutil.ClosedError{Code: code, Reason: reason}
					c.cond.Broadcast()
					c.mu.Unlock()
					return
				}
				continue
			}
			replies, err := protocol.DecodeReplies(c.proto, m.Payload, nil)
			if err != nil {
				c.t.Errorf("decode replies: %v (%q)", err, m.Payload)
				return
			}
			c.mu.Lock()
			for _, r := range replies {
				switch {
				case r.Id > 0:
					c.replies[r.Id] = r
				case r.Push != nil:
					c.pushes = append(c.pushes, r.Push)
				default:
					c.pings++
					if !c.noPong {
						c.mu.Unlock()
						c.sendRaw(&protocol.Command{})
						c.mu.Lock()
					}
				}
			}
			c.cond.Broadcast()
			c.mu.Unlock()
		}
	}
}

func (c *testClient) sendRaw(cmds ...*protocol.Command) {
	var msgs [][]byte
	for _, cmd := range cmds {
		b, err := protocol.AppendCommand(nil, c.proto, cmd)
		if err != nil {
			c.t.Fatal(err)
		}
		msgs = append(msgs, b)
	}
	c.writeFrame(protocol.JoinFrame(nil, c.proto, msgs))
}

func (c *testClient) writeFrame(frame []byte) {
	op := ws.OpText
	if c.proto == protocol.TypeProtobuf {
		op = ws.OpBinary
	}
	_ = wsutil.WriteClientMessage(c.conn, op, frame)
}

// call sends a command and waits for its reply.
func (c *testClient) call(cmd *protocol.Command) *protocol.Reply {
	c.t.Helper()
	c.mu.Lock()
	c.id++
	cmd.Id = c.id
	c.mu.Unlock()
	c.sendRaw(cmd)
	return c.waitReply(cmd.Id)
}

func (c *testClient) waitReply(id uint32) *protocol.Reply {
	c.t.Helper()
	var r *protocol.Reply
	c.waitFor("reply "+strconv.Itoa(int(id)), func() bool {
		r = c.replies[id]
		return r != nil
	})
	return r
}

// waitFor waits until cond (called with c.mu held) holds.
func (c *testClient) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	timer := time.AfterFunc(10*time.Second, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for !cond() {
		if c.closed != nil && what != "close" {
			c.t.Fatalf("waiting for %s: connection closed: %d %s", what, c.closed.Code, c.closed.Reason)
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		c.cond.Wait()
	}
}

func (c *testClient) waitClose() wsutil.ClosedError {
	c.t.Helper()
	c.waitFor("close", func() bool { return c.closed != nil })
	return *c.closed
}

func (c *testClient) connect(tok string) *protocol.ConnectResult {
	c.t.Helper()
	r := c.call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok, Name: "test"}})
	if r.Error != nil {
		c.t.Fatalf("connect: error %d %s", r.Error.Code, r.Error.Message)
	}
	return r.Connect
}

func (c *testClient) subscribe(req *protocol.SubscribeRequest) *protocol.Reply {
	c.t.Helper()
	return c.call(&protocol.Command{Subscribe: req})
}

// pubs returns the publications pushed for channel so far.
func (c *testClient) pubs(channel string) []*protocol.Publication {
	c.mu.Lock()
	defer c.mu.Unlock()
	return pubsLocked(c.pushes, channel)
}

func pubsLocked(pushes []*protocol.Push, channel string) []*protocol.Publication {
	var out []*protocol.Publication
	for _, p := range pushes {
		if p.Channel == channel && p.Pub != nil {
			out = append(out, p.Pub)
		}
	}
	return out
}

func (c *testClient) waitPubs(channel string, n int) []*protocol.Publication {
	c.t.Helper()
	var out []*protocol.Publication
	c.waitFor(strconv.Itoa(n)+" publications in "+channel, func() bool {
		out = pubsLocked(c.pushes, channel)
		return len(out) >= n
	})
	return out
}

func (c *testClient) waitPush(what string, match func(*protocol.Push) bool) *protocol.Push {
	c.t.Helper()
	var found *protocol.Push
	c.waitFor(what, func() bool {
		for _, p := range c.pushes {
			if match(p) {
				found = p
				return true
			}
		}
		return false
	})
	return found
}
