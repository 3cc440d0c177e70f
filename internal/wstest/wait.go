package wstest

import (
	"fmt"
	"time"

	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre/internal/condwait"
	"github.com/gyrehq/gyre/protocol"
)

// WaitFor waits until cond holds. cond is called without the client's
// lock, so it may use the client's accessors; it is called again after
// every change the read loop records. The test fails if the connection
// closes first or after the wait limit, counted from the call: the
// frames that keep arriving meanwhile (server pings) do not extend it.
func (c *Client) WaitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(c.opts.waitLimit)
	for {
		c.mu.Lock()
		gen, closed := c.gen, c.closed
		c.mu.Unlock()
		if cond() {
			return
		}
		if closed != nil {
			c.t.Fatalf("wstest: waiting for %s: connection closed: %d %s", what, closed.Code, closed.Reason)
		}
		left := time.Until(deadline)
		if left <= 0 || !condwait.Until(c.changed, left, func() bool { return c.gen != gen }) {
			c.t.Fatalf("wstest: no %s within %v", what, c.opts.waitLimit)
		}
	}
}

// WaitReply waits for the reply to id.
func (c *Client) WaitReply(id uint32) *protocol.Reply {
	c.t.Helper()
	var r *protocol.Reply
	c.WaitFor(fmt.Sprintf("reply %d", id), func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		r = c.replies[id]
		return r != nil
	})
	return r
}

// WaitPush waits for a push that match accepts, among every push
// received so far, and returns it.
func (c *Client) WaitPush(what string, match func(*protocol.Push) bool) *protocol.Push {
	c.t.Helper()
	var found *protocol.Push
	c.WaitFor(what, func() bool {
		for _, p := range c.Pushes() {
			if match(p) {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

// WaitPubs waits for at least n publications in channel and returns all
// received so far.
func (c *Client) WaitPubs(channel string, n int) []*protocol.Publication {
	c.t.Helper()
	var out []*protocol.Publication
	c.WaitFor(fmt.Sprintf("%d publications in %s", n, channel), func() bool {
		out = c.Pubs(channel)
		return len(out) >= n
	})
	return out
}

// WaitClose waits until the connection ends and returns its close code
// and reason.
func (c *Client) WaitClose() wsutil.ClosedError {
	c.t.Helper()
	var ce wsutil.ClosedError
	c.waitUntil("close", func() bool {
		if c.closed != nil {
			ce = *c.closed
		}
		return c.closed != nil
	})
	return ce
}

// waitUntil waits until cond, called with c.mu held, holds, failing the
// test after the wait limit.
func (c *Client) waitUntil(what string, cond func() bool) {
	c.t.Helper()
	if !condwait.Until(c.changed, c.opts.waitLimit, cond) {
		c.t.Fatalf("wstest: no %s within %v", what, c.opts.waitLimit)
	}
}
