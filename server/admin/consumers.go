package admin

import (
	"net/http"

	"github.com/gyrehq/gyre/server/consume"
)

// consumers lists the consumers of this node, in config order, as they
// are now. Each node reports its own: the other nodes' consumers share
// the same sources but count and fail on their own.
func (h *Handler) consumers(w http.ResponseWriter, r *http.Request) {
	list := []consume.Snapshot{}
	if h.cfg.Consumers != nil {
		list = append(list, h.cfg.Consumers()...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"node_name": h.node.Name(), "consumers": list})
}
