package websocket

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre/protocol"
)

// Subprotocols a client may offer; the first one offered wins.
const (
	SubprotocolJSON     = "centrifuge-json"
	SubprotocolProtobuf = "centrifuge-protobuf"
)

// Upgrade performs the WebSocket handshake on an HTTP/1.1 request and takes
// over its connection. The format comes from the negotiated subprotocol, else
// from the cf_protocol query parameter, else it is JSON.
//
// A refused origin is answered with 403 and ErrOriginNotAllowed; a request
// that is not a valid handshake is answered with 400 (405 for a method other
// than GET, 426 for an unsupported version) and an error matching
// ErrBadHandshake. On any error the request's connection is closed.
func Upgrade(w http.ResponseWriter, r *http.Request, opts Options) (*Conn, protocol.Type, error) {
	if opts.CheckOrigin != nil && !opts.CheckOrigin(r) {
		http.Error(w, "websocket: origin not allowed", http.StatusForbidden)
		return nil, protocol.TypeJSON, ErrOriginNotAllowed
	}
	u := ws.HTTPUpgrader{
		Timeout:  opts.writeTimeout(),
		Header:   opts.Header,
		Protocol: acceptSubprotocol,
	}
	nc, rw, hs, err := u.Upgrade(r, w)
	if err != nil {
		if nc != nil {
			_ = nc.Close()
		}
		var rejected *ws.ConnectionRejectedError
		if errors.As(err, &rejected) {
			return nil, protocol.TypeJSON, fmt.Errorf("%w: %w", ErrBadHandshake, err)
		}
		return nil, protocol.TypeJSON, fmt.Errorf("websocket: upgrade: %w", err)
	}
	format := negotiateFormat(hs.Protocol, r)
	c := newConn(nc, format, opts)
	// A client may pipeline its first frames right behind the handshake; they
	// sit in the HTTP server's reader, which is dropped after this.
	if n := rw.Reader.Buffered(); n > 0 {
		early, _ := rw.Reader.Peek(n)
		c.in.preload(early)
	}
	return c, format, nil
}

func acceptSubprotocol(p string) bool {
	return p == SubprotocolProtobuf || p == SubprotocolJSON
}

func negotiateFormat(subprotocol string, r *http.Request) protocol.Type {
	switch subprotocol {
	case SubprotocolProtobuf:
		return protocol.TypeProtobuf
	case SubprotocolJSON:
		return protocol.TypeJSON
	}
	// Parsing the query costs allocations; most URLs do not carry the key.
	if strings.Contains(r.URL.RawQuery, "cf_protocol=") &&
		r.URL.Query().Get("cf_protocol") == "protobuf" {
		return protocol.TypeProtobuf
	}
	return protocol.TypeJSON
}
