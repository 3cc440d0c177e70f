package gyre

import "github.com/gyrehq/gyre/internal/controlpb"

// handleEmulation runs commands POSTed for an emulated session held by
// this node. Emulated transports are not served yet, so there is no
// session to find.
func (n *Node) handleEmulation(e *controlpb.Emulation) {
	n.log.Info("emulation request for an unknown session", "session", e.Session)
}
