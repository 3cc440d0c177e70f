package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gyrehq/gyre"
)

// tailBuffer is how many publications may wait for a slow reader of the
// tail; beyond that, the stream ends (the reader reconnects) rather than
// hold the node's fan-out.
const tailBuffer = 1024

// tailWriteTimeout bounds each write of the tail: the server's write
// timeout is lifted for the stream, and a reader that takes nothing for
// this long is gone.
const tailWriteTimeout = 10 * time.Second

// tail streams the publications of ?channel= as Server-Sent Events named
// "publication", with a comment every PingInterval, until the client
// goes.
func (h *Handler) tail(w http.ResponseWriter, r *http.Request) {
	channel := r.URL.Query().Get("channel")
	if channel == "" {
		writeError(w, http.StatusBadRequest, "channel is required")
		return
	}
	if _, ok := w.(http.Flusher); !ok {
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
	out := newTailWriter(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if out.send(": tail of "+sanitizeComment(channel)+"\n\n") != nil {
		return
	}
	h.log.Info("admin tail started", "channel", channel, "remote", h.remote(r))
	ping := time.NewTicker(h.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			h.log.Info("admin tail ended", "channel", channel, "remote", h.remote(r))
			return
		case <-ended:
			// The subscription also ends with the request's context, so
			// both may be ready when the reader goes: that is no end by
			// the node.
			if r.Context().Err() != nil {
				h.log.Info("admin tail ended", "channel", channel, "remote", h.remote(r))
				return
			}
			h.log.Info("admin tail ended by the node", "channel", channel, "remote", h.remote(r))
			return
		case <-overflow:
			h.log.Warn("admin tail ended: the reader is too slow", "channel", channel, "remote", h.remote(r))
			return
		case <-ping.C:
			if out.send(": ping\n\n") != nil {
				return
			}
		case p := <-pubs:
			b, err := json.Marshal(p)
			if err != nil {
				continue
			}
			if out.send("event: publication\ndata: "+string(b)+"\n\n") != nil {
				return
			}
		}
	}
}

// tailWriter writes the events of a tail, each flushed and bounded by
// tailWriteTimeout instead of the server's timeouts.
type tailWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// newTailWriter lifts the server's read and write deadlines from w's
// request, a GET read whole already.
func newTailWriter(w http.ResponseWriter) tailWriter {
	t := tailWriter{w: w, rc: http.NewResponseController(w)}
	// A read deadline would end the request's context on HTTP/1 (net/http
	// clears it for a request read whole, which this keeps true); the
	// write deadline would fail the first write after it. A writer without
	// deadlines (a test recorder) has nothing to lift.
	_ = t.rc.SetReadDeadline(time.Time{})
	_ = t.rc.SetWriteDeadline(time.Time{})
	return t
}

// send writes and flushes s; the deadline is cleared after it, since on
// HTTP/2 it would reset the stream when it fires, write or not.
func (t tailWriter) send(s string) error {
	_ = t.rc.SetWriteDeadline(time.Now().Add(tailWriteTimeout))
	if _, err := io.WriteString(t.w, s); err != nil {
		return err
	}
	if err := t.rc.Flush(); err != nil {
		return err
	}
	_ = t.rc.SetWriteDeadline(time.Time{})
	return nil
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
