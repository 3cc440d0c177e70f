package websocket

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

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
	format := negotiateFormat(hs.Protocol, r.URL.RawQuery)
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

func negotiateFormat(subprotocol, rawQuery string) protocol.Type {
	switch subprotocol {
	case SubprotocolProtobuf:
		return protocol.TypeProtobuf
	case SubprotocolJSON:
		return protocol.TypeJSON
	}
	// Parsing the query costs allocations; most URLs do not carry the key.
	if strings.Contains(rawQuery, "cf_protocol=") {
		if q, _ := url.ParseQuery(rawQuery); q.Get("cf_protocol") == "protobuf" {
			return protocol.TypeProtobuf
		}
	}
	return protocol.TypeJSON
}

// UpgradeHead performs the WebSocket handshake on a connection whose HTTP
// request head was read from it already, without net/http: head is the
// request line and the header lines, up to and including the blank line
// that ends them, and nothing past it was read. Bytes the client sent
// behind the head are still in the connection.
//
// It answers like Upgrade (403 and ErrOriginNotAllowed for a refused
// origin, 400, 405, 426 or 505 and ErrBadHandshake for a request that is
// not a valid handshake), and closes nc on any error. CheckOrigin gets a
// request with the method, URL, Host and Origin header of the handshake.
func UpgradeHead(nc net.Conn, head []byte, opts Options) (*Conn, protocol.Type, error) {
	var req headRequest
	u := ws.Upgrader{
		Protocol:  func(p []byte) bool { return acceptSubprotocol(string(p)) },
		OnRequest: req.onRequest,
		OnHost:    req.onHost,
		OnHeader:  req.onHeader,
	}
	if opts.Header != nil {
		u.Header = ws.HandshakeHeaderHTTP(opts.Header)
	}
	if opts.CheckOrigin != nil {
		u.OnBeforeUpgrade = func() (ws.HandshakeHeader, error) {
			if !opts.CheckOrigin(req.request()) {
				req.refused = true
				return nil, ws.RejectConnectionError(ws.RejectionStatus(http.StatusForbidden), ws.RejectionReason(ErrOriginNotAllowed.Error()))
			}
			return nil, nil
		}
	}
	_ = nc.SetWriteDeadline(time.Now().Add(opts.writeTimeout()))
	hs, err := u.Upgrade(headConn{Reader: bytes.NewReader(head), Writer: nc})
	if err != nil {
		_ = nc.Close()
		var rejected *ws.ConnectionRejectedError
		switch {
		case req.refused:
			return nil, protocol.TypeJSON, fmt.Errorf("%w: %q", ErrOriginNotAllowed, req.origin)
		case errors.As(err, &rejected):
			return nil, protocol.TypeJSON, fmt.Errorf("%w: %w", ErrBadHandshake, err)
		}
		return nil, protocol.TypeJSON, fmt.Errorf("websocket: upgrade: %w", err)
	}
	format := negotiateFormat(hs.Protocol, req.rawQuery)
	return newConn(nc, format, opts), format, nil
}

// headConn reads a request head that was read from the connection already
// and writes to the connection.
type headConn struct {
	io.Reader
	io.Writer
}

// headRequest collects what UpgradeHead needs from the request head. Its
// callbacks copy: the bytes they get are valid only during the call.
type headRequest struct {
	uri, host, origin string
	rawQuery          string
	refused           bool
}

func (r *headRequest) onRequest(uri []byte) error {
	r.uri = string(uri)
	if _, q, ok := strings.Cut(r.uri, "?"); ok {
		r.rawQuery = q
	}
	return nil
}

func (r *headRequest) onHost(host []byte) error {
	r.host = string(host)
	return nil
}

func (r *headRequest) onHeader(key, value []byte) error {
	if string(key) == "Origin" {
		r.origin = string(value)
	}
	return nil
}

// request is the handshake as Options.CheckOrigin takes it.
func (r *headRequest) request() *http.Request {
	h := http.Header{}
	if r.origin != "" {
		h["Origin"] = []string{r.origin}
	}
	u, err := url.ParseRequestURI(r.uri)
	if err != nil {
		u = &url.URL{}
	}
	return &http.Request{Method: http.MethodGet, URL: u, RequestURI: r.uri, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: r.host, Header: h}
}
