package wstest

import (
	"fmt"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre/protocol"
)

// Send writes cmds in one frame with the ids they carry, failing the
// test if they cannot be encoded. A write error is not reported: the
// server may already have closed, which the read loop records.
func (c *Client) Send(cmds ...*protocol.Command) {
	c.t.Helper()
	if err := c.send(cmds...); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Client) send(cmds ...*protocol.Command) error {
	msgs := make([][]byte, 0, len(cmds))
	for _, cmd := range cmds {
		b, err := protocol.AppendCommand(nil, c.proto, cmd)
		if err != nil {
			return fmt.Errorf("wstest: encode command: %w", err)
		}
		msgs = append(msgs, b)
	}
	c.WriteFrame(protocol.JoinFrame(nil, c.proto, msgs))
	return nil
}

// WriteFrame writes frame as one data message of the client's format,
// whatever it holds.
func (c *Client) WriteFrame(frame []byte) {
	op := ws.OpText
	if c.proto == protocol.TypeProtobuf {
		op = ws.OpBinary
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.deflate {
		// Compressed, as a browser sends a message that is worth it.
		f := ws.NewFrame(op, true, deflateMessage(frame))
		f.Header.Rsv = ws.Rsv(true, false, false)
		_ = ws.WriteFrame(c.conn, ws.MaskFrameInPlace(f))
		return
	}
	_ = wsutil.WriteClientMessage(c.conn, op, frame)
}

// SetLastID makes the next [Client.Call] use id+1, to keep its ids clear
// of ones a test sends itself.
func (c *Client) SetLastID(id uint32) {
	c.mu.Lock()
	c.lastID = id
	c.mu.Unlock()
}

// Call sends cmd with a fresh id and waits for its reply; the test fails
// if the connection closes first.
func (c *Client) Call(cmd *protocol.Command) *protocol.Reply {
	c.t.Helper()
	c.sendWithID(cmd)
	return c.WaitReply(cmd.Id)
}

// TryCall is Call for a command the server may answer by closing the
// connection: it returns the reply, or else how the connection closed.
func (c *Client) TryCall(cmd *protocol.Command) (*protocol.Reply, *wsutil.ClosedError) {
	c.t.Helper()
	c.sendWithID(cmd)
	var r *protocol.Reply
	var closed *wsutil.ClosedError
	c.waitUntil(fmt.Sprintf("reply %d or close", cmd.Id), func() bool {
		r = c.replies[cmd.Id]
		closed = c.closed
		return r != nil || closed != nil
	})
	if r != nil {
		return r, nil
	}
	ce := *closed
	return nil, &ce
}

func (c *Client) sendWithID(cmd *protocol.Command) {
	c.t.Helper()
	c.mu.Lock()
	c.lastID++
	cmd.Id = c.lastID
	c.mu.Unlock()
	c.Send(cmd)
}

// Subscribe sends a subscribe request and returns its reply, error or
// not.
func (c *Client) Subscribe(req *protocol.SubscribeRequest) *protocol.Reply {
	c.t.Helper()
	return c.Call(&protocol.Command{Subscribe: req})
}

// MustSubscribe subscribes to channel and fails the test on an error
// reply.
func (c *Client) MustSubscribe(channel string) *protocol.SubscribeResult {
	c.t.Helper()
	r := c.Subscribe(&protocol.SubscribeRequest{Channel: channel})
	if r.Error != nil {
		c.t.Fatalf("wstest: subscribe %s: error %d %s", channel, r.Error.Code, r.Error.Message)
	}
	return r.Subscribe
}
