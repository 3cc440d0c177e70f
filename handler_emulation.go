package gyre

import (
	"errors"
	"net/http"

	"github.com/gyrehq/gyre/protocol"
)

// EmulationConfig configures the emulation endpoint.
type EmulationConfig struct {
	// MaxRequestBodySize is the largest request body accepted; 0 means
	// 64 KiB. Larger requests get 413.
	MaxRequestBodySize int64
	// AllowedOrigins lists the origins browsers may send from, as in
	// WebsocketConfig.
	AllowedOrigins []string
}

// EmulationHandler takes the commands of emulated connections (HTTP
// streaming, SSE), usually at /emulation. The body is an EmulationRequest
// {node, session, data}: JSON, where data is the command frame as a JSON
// string, or protobuf when sent as application/octet-stream. The replies
// go out on the connection's stream, so a request is answered 204 as soon
// as it is handed on, to this node's session or through the broker to the
// session's node. Answers: 400 for a malformed request, 404 for a session
// or node that does not exist (the client then reconnects), 413 for a body
// over the limit, 429 when the session has too many requests pending, 503
// when the broker cannot forward it.
type EmulationHandler struct {
	node *Node
	cfg  EmulationConfig
	cors cors
}

// NewEmulationHandler creates the emulation handler of n.
func NewEmulationHandler(n *Node, cfg EmulationConfig) *EmulationHandler {
	return &EmulationHandler{node: n, cfg: cfg, cors: newCORS(cfg.AllowedOrigins, "POST, OPTIONS")}
}

func (h *EmulationHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.cors.handle(w, r) || !allowMethods(w, r, http.MethodPost) {
		return
	}
	limit := h.cfg.MaxRequestBodySize
	if limit <= 0 {
		limit = defaultMaxRequestBodySize
	}
	body, err := readBody(w, r, limit)
	if err != nil {
		h.node.log.Info("emulation: bad request body", "remote", r.RemoteAddr, "error", err)
		bodyError(w, err)
		return
	}
	nodeID, session, frame, err := decodeEmulation(body, isProtobufBody(r))
	if err != nil {
		h.node.log.Info("emulation: malformed request", "remote", r.RemoteAddr, "error", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch err := h.node.emulate(nodeID, session, frame); {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, errUnknownSession):
		http.Error(w, "unknown session", http.StatusNotFound)
	case errors.Is(err, errUnknownNode):
		http.Error(w, "unknown node", http.StatusNotFound)
	case errors.Is(err, errEmulationBusy):
		http.Error(w, "too many requests pending for the session", http.StatusTooManyRequests)
	default:
		h.node.log.Warn("emulation: cannot forward request", "node", nodeID, "error", err)
		http.Error(w, "cannot reach the session's node", http.StatusServiceUnavailable)
	}
}

// decodeEmulation reads an EmulationRequest. In JSON the SDK sends the
// command frame as a string; an object (a single command) is taken as is.
func decodeEmulation(body []byte, binary bool) (nodeID, session string, frame []byte, err error) {
	proto := protocol.TypeJSON
	if binary {
		proto = protocol.TypeProtobuf
	}
	req, err := protocol.DecodeEmulationRequest(proto, body)
	if err != nil {
		return "", "", nil, errors.New("gyre: malformed emulation request")
	}
	frame = req.Data
	if !binary && string(frame) == "null" {
		frame = nil
	}
	if !binary && len(frame) > 0 && frame[0] == '"' {
		if frame, err = protocol.UnquoteJSONString(frame); err != nil {
			return "", "", nil, errors.New("gyre: malformed data in emulation request")
		}
	}
	switch {
	case req.Node == "":
		return "", "", nil, errors.New("gyre: emulation request without node")
	case req.Session == "":
		return "", "", nil, errors.New("gyre: emulation request without session")
	case len(frame) == 0:
		return "", "", nil, errors.New("gyre: emulation request without data")
	}
	return req.Node, req.Session, frame, nil
}
