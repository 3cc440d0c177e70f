package wstest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/httphead"
	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre/protocol"
)

// Client is a raw protocol client over one WebSocket connection. Its
// methods may be called from any goroutine; the ones that fail the test
// must be called from the test's goroutine.
type Client struct {
	t     testing.TB
	conn  net.Conn
	proto protocol.Type
	opts  options
	done  chan struct{}

	wmu sync.Mutex // keeps pongs from interleaving with test frames

	mu      sync.Mutex
	changed *sync.Cond // broadcast whenever gen moves
	gen     uint64     // counts changes of the recorded state
	lastID  uint32
	replies map[uint32]*protocol.Reply
	pushes  []*protocol.Push
	// arrived[i] is when pushes[i] was read.
	arrived []time.Time
	pings   int
	closed  *wsutil.ClosedError
	wire    WireStats

	deflate       bool // permessage-deflate was negotiated
	deflateAnswer string
}

// Dial opens a WebSocket to url speaking proto and starts reading; the
// connection is closed when the test ends.
func Dial(t testing.TB, url string, proto protocol.Type, opts ...Option) *Client {
	t.Helper()
	o := newOptions(proto, opts)
	d := ws.Dialer{Timeout: o.dialTimeout, Protocols: o.subprotocols}
	if o.header != nil {
		d.Header = ws.HandshakeHeaderHTTP(o.header)
	}
	if o.deflate {
		d.Extensions = []httphead.Option{deflateOffer}
	}
	conn, _, hs, err := d.Dial(context.Background(), url)
	if err != nil {
		t.Fatalf("wstest: dial %s: %v", url, err)
	}
	c := &Client{
		t:       t,
		conn:    conn,
		proto:   proto,
		opts:    o,
		done:    make(chan struct{}),
		replies: map[uint32]*protocol.Reply{},
	}
	for _, x := range hs.Extensions {
		if string(x.Name) == "permessage-deflate" {
			c.deflate, c.deflateAnswer = true, formatOption(x)
		}
	}
	c.changed = sync.NewCond(&c.mu)
	go c.readLoop()
	t.Cleanup(c.Close)
	return c
}

// Protocol is the wire format the client speaks.
func (c *Client) Protocol() protocol.Type { return c.proto }

// Conn is the underlying connection, for tests that write malformed
// frames themselves or drop the connection without a close frame.
func (c *Client) Conn() net.Conn { return c.conn }

// Done is closed once the read loop has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close drops the connection and waits for the read loop to end.
func (c *Client) Close() {
	_ = c.conn.Close()
	<-c.done
}

// Replies returns a copy of every reply received so far, by id.
func (c *Client) Replies() map[uint32]*protocol.Reply {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.replies)
}

// Pushes returns every push received so far, in order.
func (c *Client) Pushes() []*protocol.Push {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.pushes)
}

// PushTimes returns every push received so far, in order, with when
// each was read: for measuring latency.
func (c *Client) PushTimes() ([]*protocol.Push, []time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.pushes), slices.Clone(c.arrived)
}

// Pubs returns the publications pushed in channel so far.
func (c *Client) Pubs(channel string) []*protocol.Publication {
	c.mu.Lock()
	defer c.mu.Unlock()
	return PubsIn(c.pushes, channel)
}

// Pings is the number of server pings received.
func (c *Client) Pings() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pings
}

// Closed returns how the connection ended, or nil while it is open.
// A connection lost without a close frame reports code 1006.
func (c *Client) Closed() *wsutil.ClosedError {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed == nil {
		return nil
	}
	ce := *c.closed
	return &ce
}

func (c *Client) readLoop() {
	defer close(c.done)
	for {
		msgs, err := c.readMessages()
		if err != nil {
			var ce wsutil.ClosedError
			if !errors.As(err, &ce) {
				ce = wsutil.ClosedError{Code: ws.StatusAbnormalClosure, Reason: err.Error()}
			}
			c.setClosed(ce)
			return
		}
		for _, m := range msgs {
			if m.OpCode == ws.OpClose {
				code, reason := ws.ParseCloseFrameData(m.Payload)
				c.setClosed(wsutil.ClosedError{Code: code, Reason: reason})
				return
			}
			if m.OpCode.IsControl() {
				continue
			}
			if err := c.handleFrame(m.Payload); err != nil {
				c.t.Errorf("wstest: %v", err)
				c.setClosed(wsutil.ClosedError{Code: ws.StatusAbnormalClosure, Reason: err.Error()})
				return
			}
		}
	}
}

// readMessages reads what the server sent next: a data message or a
// control frame, inflating compressed messages.
func (c *Client) readMessages() ([]wsutil.Message, error) {
	if !c.deflate {
		return wsutil.ReadServerMessage(c.conn, nil)
	}
	op, p, err := c.readDeflateMessage()
	if err != nil {
		return nil, err
	}
	if op == ws.OpPing {
		c.wmu.Lock()
		_ = ws.WriteFrame(c.conn, ws.MaskFrameInPlace(ws.NewPongFrame(p)))
		c.wmu.Unlock()
	}
	return []wsutil.Message{{OpCode: op, Payload: p}}, nil
}

// handleFrame records the replies of one data frame and answers pings.
func (c *Client) handleFrame(frame []byte) error {
	replies, err := protocol.DecodeReplies(c.proto, frame, nil)
	if err != nil {
		return fmt.Errorf("decode replies %q: %w", frame, err)
	}
	pings := 0
	now := time.Now()
	c.mu.Lock()
	for _, r := range replies {
		switch {
		case r.Id > 0:
			c.replies[r.Id] = r
		case r.Push != nil:
			c.pushes = append(c.pushes, r.Push)
			c.arrived = append(c.arrived, now)
		default:
			pings++
		}
	}
	c.pings += pings
	c.gen++
	c.changed.Broadcast()
	c.mu.Unlock()
	if pings > 0 && !c.opts.noPong {
		// A failed pong shows up as a closed connection.
		_ = c.send(&protocol.Command{})
	}
	return nil
}

func (c *Client) setClosed(ce wsutil.ClosedError) {
	c.mu.Lock()
	if c.closed == nil {
		c.closed = &ce
	}
	c.gen++
	c.changed.Broadcast()
	c.mu.Unlock()
}

// PubsIn filters the publications of channel out of pushes, in order.
func PubsIn(pushes []*protocol.Push, channel string) []*protocol.Publication {
	var out []*protocol.Publication
	for _, p := range pushes {
		if p.Channel == channel && p.Pub != nil {
			out = append(out, p.Pub)
		}
	}
	return out
}
