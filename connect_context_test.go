package gyre_test

import (
	"context"
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
)

type connectValueKey struct{}

// A connecting handler's ConnectingReply.Context becomes the connection's
// context: the handlers of its later commands get what the handler put in
// it, and so does Client.Context.
func TestConnectingReplyContext(t *testing.T) {
	seen := make(chan [2]any, 1)
	_, u := newTestNodeWith(t, gyre.Config{}, func(n *gyre.Node) {
		n.OnConnecting(func(ctx context.Context, e gyre.ConnectingEvent) (gyre.ConnectingReply, error) {
			return gyre.ConnectingReply{
				Credentials: &gyre.Credentials{UserID: "u"},
				Context:     context.WithValue(ctx, connectValueKey{}, e.Headers["x-tenant"]),
			}, nil
		})
		n.OnRPC(func(ctx context.Context, c *gyre.Client, e gyre.RPCEvent) (gyre.RPCReply, error) {
			seen <- [2]any{ctx.Value(connectValueKey{}), c.Context().Value(connectValueKey{})}
			return gyre.RPCReply{}, nil
		})
	})
	c := dial(t, u, protocol.TypeJSON)
	if r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Headers: map[string]string{"x-tenant": "acme"}}}); r.Error != nil {
		t.Fatalf("connect: %v", r.Error)
	}
	if r := c.Call(&protocol.Command{Rpc: &protocol.RPCRequest{Method: "m"}}); r.Error != nil {
		t.Fatalf("rpc: %v", r.Error)
	}
	got := <-seen
	if got[0] != "acme" || got[1] != "acme" {
		t.Fatalf("the rpc handler's context has %v, Client.Context %v; want the connecting handler's acme in both", got[0], got[1])
	}
}
