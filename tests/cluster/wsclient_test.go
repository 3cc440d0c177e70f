package cluster_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/token"
)

// waitLimit bounds every wait for something a node should do soon; it is
// a hang guard, not a timing assertion.
const waitLimit = 30 * time.Second

// wsClient is a raw JSON protocol client over a real WebSocket, for tests
// that drive each step themselves.
type wsClient struct {
	t    testing.TB
	conn net.Conn

	wmu sync.Mutex // serializes frames written

	mu      sync.Mutex
	cond    *sync.Cond
	nextID  uint32
	replies map[uint32]*protocol.Reply
	pushes  []*protocol.Push
	closed  *wsutil.ClosedError
	done    chan struct{}
}

// signToken signs an HS256 connection token for user.
func signToken(t testing.TB, user string) string {
	t.Helper()
	tok, err := token.SignHMAC("HS256", []byte(hmacSecret), map[string]any{
		"sub": user,
		"exp": time.Now().Add(time.Hour).Unix(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// dialWS opens a WebSocket to url; it is closed when the test ends.
func dialWS(t testing.TB, url string) *wsClient {
	t.Helper()
	conn, _, _, err := ws.Dialer{Timeout: 10 * time.Second}.Dial(context.Background(), url)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c := &wsClient{t: t, conn: conn, replies: map[uint32]*protocol.Reply{}, done: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	go c.readLoop()
	t.Cleanup(func() {
		conn.Close()
		<-c.done
	})
	return c
}

// connectUser dials node n and connects as user.
func connectUser(t testing.TB, n *gyreNode, user string) (*wsClient, *protocol.ConnectResult) {
	t.Helper()
	c := dialWS(t, n.wsURL())
	r := c.call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: signToken(t, user), Name: "cluster-test"}})
	if r.Error != nil {
		t.Fatalf("connect to %s: error %d %s", n.name, r.Error.Code, r.Error.Message)
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
		c.write([]byte("{}"))
	}
}

func (c *wsClient) write(frame []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	// A write error shows up as a closed connection in the read loop.
	_ = wsutil.WriteClientMessage(c.conn, ws.OpText, frame)
}

// call sends cmd with a fresh id and waits for its reply.
func (c *wsClient) call(cmd *protocol.Command) *protocol.Reply {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	cmd.Id = c.nextID
	c.mu.Unlock()
	frame, err := protocol.EncodeCommand(protocol.TypeJSON, cmd)
	if err != nil {
		c.t.Fatalf("encode command: %v", err)
	}
	c.write(frame)
	var r *protocol.Reply
	c.wait(fmt.Sprintf("reply %d", cmd.Id), func() bool {
		r = c.replies[cmd.Id]
		return r != nil
	})
	return r
}

// subscribe subscribes to channel and fails the test on an error.
func (c *wsClient) subscribe(channel string) *protocol.SubscribeResult {
	c.t.Helper()
	r := c.call(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: channel}})
	if r.Error != nil {
		c.t.Fatalf("subscribe %s: error %d %s", channel, r.Error.Code, r.Error.Message)
	}
	return r.Subscribe
}

// waitPush waits for a push that match accepts, among every push
// received so far, and returns it.
func (c *wsClient) waitPush(what string, match func(*protocol.Push) bool) *protocol.Push {
	c.t.Helper()
	var found *protocol.Push
	c.wait(what, func() bool {
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

// publications returns the data of every publication received in channel.
func (c *wsClient) publications(channel string) []*protocol.Publication {
	c.mu.Lock()
	defer c.mu.Unlock()
	return pubsIn(c.pushes, channel)
}

// waitClosed waits until the server closes the connection and returns
// the close code and reason.
func (c *wsClient) waitClosed() wsutil.ClosedError {
	c.t.Helper()
	c.waitAny("close", func() bool { return c.closed != nil })
	c.mu.Lock()
	defer c.mu.Unlock()
	return *c.closed
}

// wait waits until cond, called with c.mu held, is true; it fails the
// test if the connection closes first or after waitLimit.
func (c *wsClient) wait(what string, cond func() bool) {
	c.t.Helper()
	c.waitAny(what, func() bool {
		if cond() {
			return true
		}
		if c.closed != nil {
			c.t.Fatalf("waiting for %s: connection closed: %d %s", what, c.closed.Code, c.closed.Reason)
		}
		return false
	})
}

// waitAny waits until cond, called with c.mu held, is true, or fails the
// test after waitLimit.
func (c *wsClient) waitAny(what string, cond func() bool) {
	c.t.Helper()
	expired := false
	timer := time.AfterFunc(waitLimit, func() {
		c.mu.Lock()
		expired = true
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for !cond() {
		if expired {
			c.t.Fatalf("no %s within %v", what, waitLimit)
		}
		c.cond.Wait()
	}
}
