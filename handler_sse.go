package gyre

import (
	"net/http"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/httpstream"
)

// SSEHandler serves the bidirectional emulation over Server-Sent Events,
// usually at /connection/sse. The client (an EventSource) sends its first
// commands in the query parameter cf_connect (JSON, one command per line)
// and gets every reply and push as an event whose data is the JSON
// message; later commands go to the EmulationHandler. SSE carries JSON
// only.
type SSEHandler struct {
	node *Node
	cfg  StreamConfig
	cors cors
}

// NewSSEHandler creates the SSE handler of n.
func NewSSEHandler(n *Node, cfg StreamConfig) *SSEHandler {
	return &SSEHandler{node: n, cfg: cfg, cors: newCORS(cfg.AllowedOrigins, "GET, OPTIONS")}
}

func (h *SSEHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.cors.handle(w, r) || !allowMethods(w, r, http.MethodGet) {
		return
	}
	raw, ok := r.URL.Query()["cf_connect"]
	if !ok || len(raw) != 1 || raw[0] == "" {
		http.Error(w, "missing cf_connect query parameter", http.StatusBadRequest)
		return
	}
	if int64(len(raw[0])) > h.cfg.maxBody() {
		http.Error(w, "cf_connect too large", http.StatusRequestEntityTooLarge)
		return
	}
	cmds, err := h.node.decoder.DecodeCommands(protocol.TypeJSON, []byte(raw[0]), nil)
	if err != nil || len(cmds) == 0 {
		h.node.log.Info("sse: malformed cf_connect", "remote", r.RemoteAddr, "error", err)
		http.Error(w, "malformed cf_connect: expected JSON commands", http.StatusBadRequest)
		return
	}
	h.node.serveEmulated(w, r, "sse", protocol.TypeJSON, httpstream.SSE, cmds, len(raw[0]), h.cfg)
}
