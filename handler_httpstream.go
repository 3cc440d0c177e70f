package gyre

import (
	"net/http"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/httpstream"
)

// HTTPStreamHandler serves the bidirectional emulation over HTTP
// streaming, usually at /connection/http_stream. The client POSTs its
// first commands (connect, often with subscribes) and reads the replies
// and pushes from the response; its later commands go to the
// EmulationHandler with the session from the connect result. A body sent
// as application/octet-stream is protobuf (length-delimited commands, and
// the stream is the same), anything else is JSON (commands one per line,
// and the stream is newline-delimited JSON).
type HTTPStreamHandler struct {
	node *Node
	cfg  StreamConfig
	cors cors
}

// NewHTTPStreamHandler creates the HTTP streaming handler of n.
func NewHTTPStreamHandler(n *Node, cfg StreamConfig) *HTTPStreamHandler {
	return &HTTPStreamHandler{node: n, cfg: cfg, cors: newCORS(cfg.AllowedOrigins, "POST, OPTIONS")}
}

func (h *HTTPStreamHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.cors.handle(w, r) || !allowMethods(w, r, http.MethodPost) {
		return
	}
	body, err := readBody(w, r, h.cfg.maxBody())
	if err != nil {
		h.node.log.Info("http_stream: bad request body", "remote", r.RemoteAddr, "error", err)
		bodyError(w, err)
		return
	}
	proto, format := protocol.TypeJSON, httpstream.Lines
	if isProtobufBody(r) {
		proto, format = protocol.TypeProtobuf, httpstream.Delimited
	}
	cmds, err := h.node.decoder.DecodeCommands(proto, body, nil)
	if err != nil || len(cmds) == 0 {
		h.node.log.Info("http_stream: malformed commands", "remote", r.RemoteAddr, "error", err)
		http.Error(w, "malformed commands in request body", http.StatusBadRequest)
		return
	}
	h.node.serveEmulated(w, r, "http_stream", proto, format, cmds, len(body), h.cfg)
}

// serveEmulated runs one emulated bidirectional connection: it opens the
// stream, registers the session, runs the first commands (size bytes of
// the request) and holds the request until the connection ends.
func (n *Node) serveEmulated(w http.ResponseWriter, r *http.Request, name string, proto protocol.Type, format httpstream.Format, cmds []*protocol.Command, size int, cfg StreamConfig) {
	s, err := httpstream.Start(w, r, format, httpstream.Options{WriteTimeout: cfg.WriteTimeout})
	if err != nil {
		n.log.Info(name+": cannot stream the response", "remote", r.RemoteAddr, "error", err)
		return
	}
	t := newStreamTransport(name, proto, false, s)
	c := n.NewClient(r.Context(), t)
	t.session = n.sessions.add(c)
	defer n.sessions.remove(t.session)
	c.handleCommands(cmds, size)
	t.serve(r.Context(), c)
}
