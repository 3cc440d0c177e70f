package gyre_test

import (
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
)

// TestSendWithoutHandler: a send command on a node without a message
// handler closes the connection with 3508, since send has no reply.
func TestSendWithoutHandler(t *testing.T) {
	_, url := newTestNode(t, chatConfig())
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", 0, nil))
	c.Send(&protocol.Command{Send: &protocol.SendRequest{Data: []byte(`{"hi":1}`)}})
	if ce := c.WaitClose(); ce.Code != 3508 {
		t.Fatalf("closed %d (%s), want 3508", ce.Code, ce.Reason)
	}
}

// TestSendWithHandler: with a handler, the message reaches it and the
// connection carries on.
func TestSendWithHandler(t *testing.T) {
	got := make(chan string, 1)
	_, url := newTestNodeWith(t, chatConfig(), func(n *gyre.Node) {
		n.OnMessage(func(c *gyre.Client, data []byte) { got <- c.UserID() + " " + string(data) })
	})
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", 0, nil))
	c.Send(&protocol.Command{Send: &protocol.SendRequest{Data: []byte(`{"hi":1}`)}})
	if m := <-got; m != `42 {"hi":1}` {
		t.Fatalf("handler got %q", m)
	}
	if r := c.Call(&protocol.Command{Ping: &protocol.PingRequest{}}); r.Error != nil {
		t.Fatalf("ping after send: %+v", r.Error)
	}
}
