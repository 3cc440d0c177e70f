package wstest

import (
	"net/http"
	"time"

	"github.com/gyrehq/gyre/protocol"
)

// DefaultWaitLimit bounds every wait unless [WaitLimit] says otherwise.
const DefaultWaitLimit = 10 * time.Second

// protobufSubprotocol is the WebSocket subprotocol that selects the
// protobuf format; JSON needs none.
const protobufSubprotocol = "centrifuge-protobuf"

// Option changes how [Dial] opens and runs a client.
type Option func(*options)

type options struct {
	subprotocols []string
	setProtocols bool
	dialTimeout  time.Duration
	waitLimit    time.Duration
	noPong       bool
	header       http.Header
	deflate      bool
}

func newOptions(proto protocol.Type, opts []Option) options {
	o := options{dialTimeout: 10 * time.Second, waitLimit: DefaultWaitLimit}
	for _, opt := range opts {
		opt(&o)
	}
	if !o.setProtocols && proto == protocol.TypeProtobuf {
		o.subprotocols = []string{protobufSubprotocol}
	}
	return o
}

// Subprotocols replaces the subprotocols offered in the handshake, which
// by default name the protobuf format for a protobuf client and nothing
// for JSON; no arguments offer none, to test a server's fallback.
func Subprotocols(names ...string) Option {
	return func(o *options) {
		o.subprotocols = names
		o.setProtocols = true
	}
}

// DialTimeout bounds the handshake (10 seconds by default).
func DialTimeout(d time.Duration) Option {
	return func(o *options) { o.dialTimeout = d }
}

// WaitLimit bounds every wait of the client ([DefaultWaitLimit] by
// default), for servers that take longer to react, such as a cluster.
func WaitLimit(d time.Duration) Option {
	return func(o *options) { o.waitLimit = d }
}

// NoPong leaves server pings unanswered, to let the server time the
// client out.
func NoPong() Option {
	return func(o *options) { o.noPong = true }
}

// Header adds h to the handshake request.
func Header(h http.Header) Option {
	return func(o *options) { o.header = h }
}

// Deflate offers permessage-deflate as browsers do
// ("permessage-deflate; client_max_window_bits"). When the server accepts,
// the client inflates compressed messages (with the standard library, a
// decoder independent of the server's), compresses the frames it sends,
// and counts both in [Client.Wire].
func Deflate() Option {
	return func(o *options) { o.deflate = true }
}
