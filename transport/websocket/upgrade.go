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

	"github.com/gobwas/httphead"
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
// from the query parameters cf_protocol and format, else it is JSON (see the
// package documentation). A Sec-WebSocket-Protocol header that offers none of
// ours, an empty one included, negotiates no subprotocol and is no error.
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
	// The subprotocol is chosen here, not by gobwas/ws, whose parser
	// refuses a header without a token (400), which is what Python's
	// websockets sends for an empty list. Its answer then goes out as an
	// extra header, which gobwas/ws also writes on a refusal: harmless on
	// a 4xx.
	var subprotocol string
	for _, offer := range r.Header["Sec-Websocket-Protocol"] {
		if subprotocol = selectSubprotocol(offer); subprotocol != "" {
			break
		}
	}
	deflate := deflateDeclined
	if opts.Compression != nil {
		deflate = negotiate(r.Header["Sec-Websocket-Extensions"])
	}
	u := ws.HTTPUpgrader{
		Timeout: opts.writeTimeout(),
		Header:  answerHeader(opts.Header, subprotocol, deflate),
	}
	nc, rw, _, err := u.Upgrade(r, w)
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
	// The http.Server's read and write timeouts must not end the
	// connection: its pings and write timeout bound it from here on.
	// net/http clears them at the hijack and gobwas/ws after answering;
	// clearing here keeps that true whatever those do.
	_ = nc.SetDeadline(time.Time{})
	format := negotiateFormat(subprotocol, r.URL.RawQuery)
	c := newConn(nc, format, opts)
	if deflate != deflateDeclined {
		c.deflate = opts.Compression
	}
	// A client may pipeline its first frames right behind the handshake; they
	// sit in the HTTP server's reader, which is dropped after this.
	if n := rw.Reader.Buffered(); n > 0 {
		early, _ := rw.Reader.Peek(n)
		c.in.preload(early)
	}
	return c, format, nil
}

// selectSubprotocol returns the first of our subprotocols in offer, the
// value of one Sec-WebSocket-Protocol line, or "" if it has none. The list
// is read as RFC 9110 (section 5.6.1) asks of a recipient: elements are
// separated by commas with optional spaces or tabs around them, and empty
// elements are ignored, so an empty or blank value offers nothing instead
// of being an error. An element that is not exactly one of ours (a typo, a
// parameter after it) does not select it: a client must never be answered
// with a subprotocol it did not offer.
func selectSubprotocol[T string | []byte](offer T) string {
	for len(offer) > 0 {
		end := 0
		for end < len(offer) && offer[end] != ',' {
			end++
		}
		elem := trimOWS(offer[:end])
		switch string(elem) {
		case SubprotocolProtobuf:
			return SubprotocolProtobuf
		case SubprotocolJSON:
			return SubprotocolJSON
		}
		if end == len(offer) {
			break
		}
		offer = offer[end+1:]
	}
	return ""
}

// trimOWS cuts the spaces and tabs around a list element.
func trimOWS[T string | []byte](s T) T {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// Headers of a 101 answer that names a subprotocol or accepts compression,
// shared by every upgrade without Options.Header, by [subprotocol][deflate]
// (subprotocol: none, JSON, protobuf); gobwas/ws only reads them. Keys are
// spelled as in RFC 6455, since http.Header.Write writes keys as stored.
var answers = func() (a [3][len(extensionAnswers)]http.Header) {
	for i, sp := range []string{"", SubprotocolJSON, SubprotocolProtobuf} {
		for j, ext := range extensionAnswers {
			h := http.Header{}
			if sp != "" {
				h["Sec-WebSocket-Protocol"] = []string{sp}
			}
			if ext != "" {
				h["Sec-WebSocket-Extensions"] = []string{ext}
			}
			if len(h) > 0 {
				a[i][j] = h
			}
		}
	}
	return a
}()

// answerHeader is the extra header of the handshake answer: extra with
// the chosen subprotocol, if any, and the answer to permessage-deflate
// offers, if one is accepted. A non-nil extra is copied, not changed.
func answerHeader(extra http.Header, subprotocol string, deflate deflateAnswer) http.Header {
	if subprotocol == "" && deflate == deflateDeclined {
		return extra
	}
	if extra == nil {
		i := 0
		switch subprotocol {
		case SubprotocolJSON:
			i = 1
		case SubprotocolProtobuf:
			i = 2
		}
		return answers[i][deflate]
	}
	h := extra.Clone()
	if subprotocol != "" {
		h["Sec-WebSocket-Protocol"] = []string{subprotocol}
	}
	if deflate != deflateDeclined {
		h["Sec-WebSocket-Extensions"] = []string{extensionAnswers[deflate]}
	}
	return h
}

// negotiateFormat picks the wire format: the subprotocol's when one was
// negotiated (the client was told so in the answer), else protobuf when the
// query asks for it, else JSON.
func negotiateFormat(subprotocol, rawQuery string) protocol.Type {
	switch subprotocol {
	case SubprotocolProtobuf:
		return protocol.TypeProtobuf
	case SubprotocolJSON:
		return protocol.TypeJSON
	}
	if queryAsksProtobuf(rawQuery) {
		return protocol.TypeProtobuf
	}
	return protocol.TypeJSON
}

// queryAsksProtobuf reports whether cf_protocol=protobuf or format=protobuf
// (the name in older Centrifugo documentation and clients) is in a URL's raw
// query; as with url.Values.Get, the first value of each key counts. It reads
// the query in place instead of parsing it into a map: every handshake comes
// through here, and most queries hold nothing or only a token. Only a pair
// with escapes is unescaped.
func queryAsksProtobuf(rawQuery string) bool {
	var seenCF, seenFormat bool
	for rawQuery != "" && !(seenCF && seenFormat) {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		key, value, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(pair, "%+") {
			var err error
			if key, err = url.QueryUnescape(key); err != nil {
				continue
			}
			if value, err = url.QueryUnescape(value); err != nil {
				continue
			}
		}
		switch {
		case key == "cf_protocol" && !seenCF:
			seenCF = true
		case key == "format" && !seenFormat:
			seenFormat = true
		default:
			continue
		}
		if value == "protobuf" {
			return true
		}
	}
	return false
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
		// Called for each Sec-WebSocket-Protocol line until one selects.
		ProtocolCustom: func(offer []byte) (string, bool) { return selectSubprotocol(offer), true },
		OnRequest:      req.onRequest,
		OnHost:         req.onHost,
		OnHeader:       req.onHeader,
	}
	if opts.Header != nil {
		u.Header = ws.HandshakeHeaderHTTP(opts.Header)
	}
	if opts.Compression != nil {
		// Called for each Sec-WebSocket-Extensions line; the answer goes
		// out from OnBeforeUpgrade, so the options stay as they are. A
		// header that does not parse means no compression, never a
		// refusal.
		u.ExtensionCustom = func(line []byte, opts []httphead.Option) ([]httphead.Option, bool) {
			req.deflate.add(scanOffers(line))
			return opts, true
		}
	}
	if opts.CheckOrigin != nil || opts.Compression != nil {
		u.OnBeforeUpgrade = func() (ws.HandshakeHeader, error) {
			if opts.CheckOrigin != nil && !opts.CheckOrigin(req.request()) {
				req.refused = true
				return nil, ws.RejectConnectionError(ws.RejectionStatus(http.StatusForbidden), ws.RejectionReason(ErrOriginNotAllowed.Error()))
			}
			return headAnswers[req.deflate.result()], nil
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
	c := newConn(nc, format, opts)
	if req.deflate.result() != deflateDeclined {
		c.deflate = opts.Compression
	}
	return c, format, nil
}

// Extra answers of UpgradeHead by deflateAnswer; OnBeforeUpgrade must
// return a header, an empty one when compression is declined.
var headAnswers = func() (a [len(extensionAnswers)]ws.HandshakeHeader) {
	for i, ext := range extensionAnswers {
		a[i] = ws.HandshakeHeaderString("")
		if ext != "" {
			a[i] = ws.HandshakeHeaderString("Sec-WebSocket-Extensions: " + ext + "\r\n")
		}
	}
	return a
}()

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
	deflate           negotiation
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
