package gyre

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/websocket"
)

// WebsocketConfig configures the WebSocket transport handler.
type WebsocketConfig struct {
	// MessageSizeLimit is the largest message a client may send; 0 means
	// 64 KiB. Over it the connection is closed with 1009.
	MessageSizeLimit int64
	// WriteTimeout bounds each write; 0 means 1s. A client that cannot
	// take a frame in time is disconnected.
	WriteTimeout time.Duration
	// AllowedOrigins lists the origins browsers may connect from
	// ("https://example.com", or patterns like "https://*.example.com");
	// ["*"] allows all. Empty means only requests without an Origin header
	// or from the same host.
	AllowedOrigins []string
	// DisablePolling reads every connection with a goroutine of its own.
	// By default, on Linux, connections over plain TCP are watched by one
	// poller shared by the process, so that an idle connection has no
	// goroutine; TLS connections and other systems always use a goroutine.
	DisablePolling bool
	// Compression accepts a client's offer of permessage-deflate (RFC
	// 7692), without context takeover either way, so a connection keeps no
	// compression state. Each publication is compressed once for all the
	// connections that negotiated it, not once per connection.
	Compression bool
	// CompressionLevel is the deflate level, 1 (fastest) to 9 (smallest),
	// or -2 for Huffman coding only; 0 means 1.
	CompressionLevel int
	// CompressionMinSize is the smallest message, in bytes, that is
	// compressed; shorter ones go as they are.
	CompressionMinSize int
	// DecompressedMessageSizeLimit bounds what a message the client
	// compressed may inflate to; 0 means MessageSizeLimit. Over it the
	// connection is closed with 1009.
	DecompressedMessageSizeLimit int64
}

// compression is the websocket package's Compression for a handler's
// settings, nil when off.
func compression(on bool, level, minSize int, maxInflated int64) *websocket.Compression {
	if !on {
		return nil
	}
	if level == 0 {
		level = 1
	}
	return &websocket.Compression{Level: level, MinSize: minSize, MaxInflated: maxInflated}
}

// WebsocketHandler serves the bidirectional WebSocket transport, usually at
// /connection/websocket.
type WebsocketHandler struct {
	node   *Node
	opts   websocket.Options
	poller *websocket.Poller // nil: a goroutine per connection
}

// wsPoller is the process's poller, started with the first handler that
// uses it and never stopped: one goroutine serves every node.
var wsPoller = sync.OnceValues(websocket.NewPoller)

// NewWebsocketHandler creates the WebSocket handler of n.
func NewWebsocketHandler(n *Node, cfg WebsocketConfig) *WebsocketHandler {
	h := &WebsocketHandler{node: n, opts: websocket.Options{
		ReadLimit:    cfg.MessageSizeLimit,
		WriteTimeout: cfg.WriteTimeout,
		CheckOrigin:  OriginChecker(cfg.AllowedOrigins),
		Compression:  compression(cfg.Compression, cfg.CompressionLevel, cfg.CompressionMinSize, cfg.DecompressedMessageSizeLimit),
	}}
	if !cfg.DisablePolling {
		p, err := wsPoller()
		if err != nil && !errors.Is(err, websocket.ErrPollUnsupported) {
			n.log.Warn("websocket poller unavailable, reading with a goroutine per connection", "error", err)
		}
		h.poller = p
	}
	return h
}

func (h *WebsocketHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	conn, _, err := websocket.Upgrade(w, r, h.opts)
	if err != nil {
		h.node.log.Info("websocket upgrade failed", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"), "error", err)
		return
	}
	// The connection outlives this request: keep the request's values
	// (for handlers) but not its cancellation.
	h.serve(context.WithoutCancel(r.Context()), conn)
}

// ServeConn serves nc, a connection whose HTTP request head, an upgrade
// request for this handler, was read from it already (see
// [websocket.UpgradeHead]): a listener that sorts connections before
// net/http sees them hands WebSocket clients over this way, which spares
// each connect net/http's request parsing and buffers. The client's
// context is ctx.
func (h *WebsocketHandler) ServeConn(ctx context.Context, nc net.Conn, head []byte) {
	conn, _, err := websocket.UpgradeHead(nc, head, h.opts)
	if err != nil {
		h.node.log.Info("websocket upgrade failed", "remote", nc.RemoteAddr().String(), "error", err)
		return
	}
	h.serve(ctx, conn)
}

// serve runs an upgraded connection as a client of the node.
func (h *WebsocketHandler) serve(ctx context.Context, conn *websocket.Conn) {
	t := &wsTransport{conn: conn}
	c := h.node.NewClient(ctx, t)
	// The goroutine that upgraded ends here; its stack grew while it read
	// the request. Reads go on without it, and commands run on short-lived
	// goroutines, so an idle connection keeps no stack at all when polled.
	conn.ServeReads(h.poller, func(payload []byte, binary bool) bool {
		if binary && c.proto == protocol.TypeJSON {
			h.node.log.Info("binary frame on a JSON connection", "client", c.id, "remote", conn.RemoteAddr().String())
			c.Disconnect(DisconnectBadProtocol)
			return false
		}
		return c.HandleFrame(payload)
	}, func(err error) {
		c.Close(readDisconnect(c, conn, err))
	})
}

// readDisconnect tells why reading stopped. A frame the WebSocket layer
// refused gets the RFC 6455 status code for what was wrong, and a log line
// that says it: the client's disconnect line alone shows only the code.
// Anything else is the connection going away.
func readDisconnect(c *Client, conn *websocket.Conn, err error) *Disconnect {
	var d *Disconnect
	switch {
	case errors.Is(err, websocket.ErrMessageTooLarge):
		d = DisconnectMessageTooBig
	case errors.Is(err, websocket.ErrProtocol):
		d = DisconnectProtocolError
	case errors.Is(err, websocket.ErrInvalidUTF8):
		d = DisconnectInvalidPayload
	default:
		return DisconnectConnectionClosed
	}
	// A misbehaving client is news for whoever runs the server, not a
	// fault of the server: Info, as for commands that do not decode.
	if log := c.node.log; log.Enabled(context.Background(), slog.LevelInfo) {
		log.Info("websocket frame rejected", "transport", c.transport.Name(), "client", c.id, "user", c.UserID(),
			"remote", conn.RemoteAddr().String(), "code", d.Code, "error", err)
	}
	return d
}

type wsTransport struct {
	conn *websocket.Conn
}

func (t *wsTransport) Name() string                  { return "websocket" }
func (t *wsTransport) Protocol() protocol.Type       { return t.conn.Protocol() }
func (t *wsTransport) Unidirectional() bool          { return false }
func (t *wsTransport) WriteFrame(frame []byte) error { return t.conn.WriteFrame(frame) }
func (t *wsTransport) WriteFrames(frames []string) error {
	return t.conn.WriteFrames(frames)
}
func (t *wsTransport) Compression() *websocket.Compression { return t.conn.Compression() }
func (t *wsTransport) CanTryWrite() bool                   { return t.conn.CanTryWrite() }
func (t *wsTransport) TryWriteFrame(buf []byte) (bool, error) {
	return t.conn.TryWriteFrame(buf)
}
func (t *wsTransport) FlushFrame() error { return t.conn.FlushFrame() }
func (t *wsTransport) Close(d *Disconnect) error {
	return t.conn.Close(uint16(d.Code), d.Reason)
}
