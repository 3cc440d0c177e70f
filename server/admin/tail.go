package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gyrehq/gyre"
)

// tailBuffer is how many publications may wait for a slow reader of the
// tail; beyond that, the stream ends (the reader reconnects) rather than
// hold the node's fan-out.
const tailBuffer = 1024

// tail streams the publications of ?channel= as Server-Sent Events named
// "publication", with a comment every PingInterval, until the client
// goes.
func (h *Handler) tail(w http.ResponseWriter, r *http.Request) {
	channel := r.URL.Query().Get("channel")
	if channel == "" {
		writeError(w, http.StatusBadRequest, "channel is required")
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "streaming is not supported here")
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	pubs := make(chan publicationJSON, tailBuffer)
	overflow := make(chan struct{})
	fn := func(ch string, p *gyre.Publication) {
		select {
		case pubs <- newPublicationJSON(ch, p):
		default:
			select {
			case <-overflow:
			default:
				close(overflow)
			}
		}
	}
	ended, err := h.node.Tail(ctx, channel, fn)
	if err != nil {
		h.log.Info("admin tail refused", "channel", channel, "remote", h.remote(r), "error", err)
		writeError(w, http.StatusBadRequest, fmt.Sprintf("cannot tail %q: %v", channel, err))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, ": tail of "+sanitizeComment(channel)+"\n\n")
	flusher.Flush()
	h.log.Info("admin tail started", "channel", channel, "remote", h.remote(r))
	ping := time.NewTicker(h.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			h.log.Info("admin tail ended", "channel", channel, "remote", h.remote(r))
			return
		case <-ended:
			h.log.Info("admin tail ended by the node", "channel", channel, "remote", h.remote(r))
			return
		case <-overflow:
			h.log.Warn("admin tail ended: the reader is too slow", "channel", channel, "remote", h.remote(r))
			return
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case p := <-pubs:
			b, err := json.Marshal(p)
			if err != nil {
				continue
			}
			if _, err := fmt.Fprintf(w, "event: publication\ndata: %s\n\n", b); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// sanitizeComment keeps a channel name on one SSE comment line.
func sanitizeComment(s string) string {
	out := []rune(s)
	for i, c := range out {
		if c == '\n' || c == '\r' {
			out[i] = ' '
		}
	}
	return string(out)
}
