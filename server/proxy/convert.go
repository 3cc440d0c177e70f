package proxy

import (
	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
)

// override turns the backend's per-subscription option overrides into the
// engine's.
func override(o *proxypb.SubscribeOptionOverride) *gyre.SubscribeOverride {
	if o == nil {
		return nil
	}
	return &gyre.SubscribeOverride{
		Presence:           boolValue(o.Presence),
		JoinLeave:          boolValue(o.JoinLeave),
		ForcePushJoinLeave: boolValue(o.ForcePushJoinLeave),
		ForceRecovery:      boolValue(o.ForceRecovery),
		ForcePositioning:   boolValue(o.ForcePositioning),
	}
}

func boolValue(b *proxypb.BoolValue) *bool {
	if b == nil {
		return nil
	}
	v := b.Value
	return &v
}

// filterNode turns the backend's server-side tags filter into the client
// protocol's, which the engine compiles.
func filterNode(f *proxypb.FilterNode) *protocol.FilterNode {
	if f == nil {
		return nil
	}
	out := &protocol.FilterNode{Op: f.Op, Key: f.Key, Cmp: f.Cmp, Val: f.Val, Vals: f.Vals}
	for _, n := range f.Nodes {
		out.Nodes = append(out.Nodes, filterNode(n))
	}
	return out
}
