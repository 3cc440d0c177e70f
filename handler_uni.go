package gyre

import (
	"net/http"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/httpstream"
)

// Unidirectional transports take one ConnectRequest and then only receive
// bare pushes: the connect push first, publications of the server-side
// subscriptions, "{}" pings with no pong expected, and a disconnect push
// before the server ends the connection. They carry JSON only.

// UniHTTPStreamHandler serves the unidirectional HTTP streaming transport,
// usually at /connection/uni_http_stream: the client POSTs a ConnectRequest
// (JSON; an empty body is an empty request) and reads newline-delimited
// JSON pushes.
type UniHTTPStreamHandler struct {
	node *Node
	cfg  StreamConfig
	cors cors
}

// NewUniHTTPStreamHandler creates the unidirectional HTTP streaming handler
// of n.
func NewUniHTTPStreamHandler(n *Node, cfg StreamConfig) *UniHTTPStreamHandler {
	return &UniHTTPStreamHandler{node: n, cfg: cfg, cors: newCORS(cfg.AllowedOrigins, "POST, OPTIONS")}
}

func (h *UniHTTPStreamHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.cors.handle(w, r) || !allowMethods(w, r, http.MethodPost) {
		return
	}
	body, err := readBody(w, r, h.cfg.maxBody())
	if err != nil {
		h.node.log.Info("uni_http_stream: bad request body", "remote", r.RemoteAddr, "error", err)
		bodyError(w, err)
		return
	}
	req, err := decodeConnectRequest(h.node.decoder, body)
	if err != nil {
		h.node.log.Info("uni_http_stream: malformed connect request", "remote", r.RemoteAddr, "error", err)
		http.Error(w, "malformed connect request: expected a JSON object", http.StatusBadRequest)
		return
	}
	h.node.serveUni(w, r, "uni_http_stream", httpstream.Lines, req, h.cfg)
}

// UniSSEHandler serves the unidirectional Server-Sent Events transport,
// usually at /connection/uni_sse: GET with the ConnectRequest JSON in the
// query parameter cf_connect (none is an empty request), or POST with it
// as the body. Every push is one event.
type UniSSEHandler struct {
	node *Node
	cfg  StreamConfig
	cors cors
}

// NewUniSSEHandler creates the unidirectional SSE handler of n.
func NewUniSSEHandler(n *Node, cfg StreamConfig) *UniSSEHandler {
	return &UniSSEHandler{node: n, cfg: cfg, cors: newCORS(cfg.AllowedOrigins, "GET, POST, OPTIONS")}
}

func (h *UniSSEHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.cors.handle(w, r) || !allowMethods(w, r, http.MethodGet, http.MethodPost) {
		return
	}
	var raw []byte
	if r.Method == http.MethodPost {
		body, err := readBody(w, r, h.cfg.maxBody())
		if err != nil {
			h.node.log.Info("uni_sse: bad request body", "remote", r.RemoteAddr, "error", err)
			bodyError(w, err)
			return
		}
		raw = body
	} else if v := r.URL.Query().Get("cf_connect"); v != "" {
		if int64(len(v)) > h.cfg.maxBody() {
			http.Error(w, "cf_connect too large", http.StatusRequestEntityTooLarge)
			return
		}
		raw = []byte(v)
	}
	req, err := decodeConnectRequest(h.node.decoder, raw)
	if err != nil {
		h.node.log.Info("uni_sse: malformed connect request", "remote", r.RemoteAddr, "error", err)
		http.Error(w, "malformed connect request: expected a JSON object", http.StatusBadRequest)
		return
	}
	h.node.serveUni(w, r, "uni_sse", httpstream.SSE, req, h.cfg)
}

// serveUni runs one unidirectional streaming connection until it ends.
func (n *Node) serveUni(w http.ResponseWriter, r *http.Request, name string, format httpstream.Format, req *protocol.ConnectRequest, cfg StreamConfig) {
	s, err := httpstream.Start(w, r, format, httpstream.Options{WriteTimeout: cfg.WriteTimeout})
	if err != nil {
		n.log.Info(name+": cannot stream the response", "remote", r.RemoteAddr, "error", err)
		return
	}
	t := newStreamTransport(name, protocol.TypeJSON, true, s)
	c := n.NewClient(r.Context(), t)
	c.Connect(req)
	t.serve(r.Context(), c)
}
