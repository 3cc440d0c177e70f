package gyre

import (
	"net/http"
	"time"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/websocket"
)

// UniWebsocketConfig configures the unidirectional WebSocket handler.
type UniWebsocketConfig struct {
	// MessageSizeLimit is the largest message a client may send (its
	// ConnectRequest); 0 means 64 KiB. Over it the connection is closed
	// with 1009.
	MessageSizeLimit int64
	// WriteTimeout bounds each write; 0 means 1s.
	WriteTimeout time.Duration
	// AllowedOrigins lists the origins browsers may connect from, as in
	// WebsocketConfig.
	AllowedOrigins []string
	// JoinPushMessages sends the pushes written together in one frame,
	// newline-delimited; the client must split them. False sends one push
	// per frame. A connection with compression always gets one per frame.
	JoinPushMessages bool
	// Compression accepts permessage-deflate, as in WebsocketConfig.
	Compression                  bool
	CompressionLevel             int
	CompressionMinSize           int
	DecompressedMessageSizeLimit int64
}

// UniWebsocketHandler serves the unidirectional WebSocket transport,
// usually at /connection/uni_websocket. The client sends a ConnectRequest
// (JSON) as its first message, or puts it in the query parameter
// cf_connect; then it only receives bare pushes, "{}" pings included. The
// transport carries JSON only.
type UniWebsocketHandler struct {
	node *Node
	opts websocket.Options
	join bool
}

// NewUniWebsocketHandler creates the unidirectional WebSocket handler of n.
func NewUniWebsocketHandler(n *Node, cfg UniWebsocketConfig) *UniWebsocketHandler {
	return &UniWebsocketHandler{node: n, join: cfg.JoinPushMessages, opts: websocket.Options{
		ReadLimit:    cfg.MessageSizeLimit,
		WriteTimeout: cfg.WriteTimeout,
		CheckOrigin:  OriginChecker(cfg.AllowedOrigins),
		Compression:  compression(cfg.Compression, cfg.CompressionLevel, cfg.CompressionMinSize, cfg.DecompressedMessageSizeLimit),
	}}
}

func (h *UniWebsocketHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	conn, format, err := websocket.Upgrade(w, r, h.opts)
	if err != nil {
		h.node.log.Info("uni_websocket upgrade failed", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"), "error", err)
		return
	}
	if format != protocol.TypeJSON {
		d := DisconnectBadProtocol
		_ = conn.Close(uint16(d.Code), d.Reason)
		return
	}
	t := &uniWSTransport{conn: conn, join: h.join}
	c := h.node.NewClient(r.Context(), t)
	if !h.connect(c, conn, r) {
		return
	}
	// Nothing more is expected from the client, but reading answers its
	// pings and notices when it goes away.
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			c.Close(readDisconnect(c, conn, err))
			return
		}
	}
}

// connect takes the ConnectRequest from the query or the first message,
// which must come within the stale delay.
func (h *UniWebsocketHandler) connect(c *Client, conn *websocket.Conn, r *http.Request) bool {
	var raw []byte
	if v := r.URL.Query().Get("cf_connect"); v != "" {
		raw = []byte(v)
	} else {
		stale := time.AfterFunc(h.node.cfg.StaleCloseDelay, c.closeIfStale)
		payload, binary, err := conn.ReadMessage()
		stale.Stop()
		if err != nil {
			c.Close(readDisconnect(c, conn, err))
			return false
		}
		if binary {
			c.Disconnect(DisconnectBadProtocol)
			return false
		}
		raw = payload
	}
	req, err := decodeConnectRequest(h.node.decoder, raw)
	if err != nil {
		h.node.log.Info("uni_websocket: malformed connect request", "client", c.id, "remote", r.RemoteAddr, "error", err)
		c.Disconnect(DisconnectBadRequest)
		return false
	}
	return c.Connect(req)
}

// uniWSTransport sends pushes over a WebSocket, one per frame unless join
// is set.
type uniWSTransport struct {
	conn *websocket.Conn
	join bool
}

func (t *uniWSTransport) Name() string            { return "uni_websocket" }
func (t *uniWSTransport) Protocol() protocol.Type { return protocol.TypeJSON }
func (t *uniWSTransport) Unidirectional() bool    { return true }

// WriteFrame splits the writer's frame at the newlines between its JSON
// messages (the encoder escapes newlines inside them).
func (t *uniWSTransport) WriteFrame(frame []byte) error {
	if t.join {
		return t.conn.WriteFrame(frame)
	}
	for msg := range protocol.JSONMessages(frame) {
		if err := t.conn.WriteFrame(msg); err != nil {
			return err
		}
	}
	return nil
}

func (t *uniWSTransport) WriteFrames(frames []string) error {
	return t.conn.WriteFrames(frames)
}
func (t *uniWSTransport) Compression() *websocket.Compression { return t.conn.Compression() }

func (t *uniWSTransport) Close(d *Disconnect) error {
	return t.conn.Close(uint16(d.Code), d.Reason)
}
