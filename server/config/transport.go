package config

import "time"

// WebSocket configures the bidirectional WebSocket transport.
type WebSocket struct {
	Disabled      bool   `key:"disabled" help:"Turn the WebSocket endpoint off."`
	HandlerPrefix string `key:"handler_prefix" default:"/connection/websocket" help:"URL path of the WebSocket endpoint."`
	WebSocketConnections
}

// UniWebSocket configures the unidirectional WebSocket transport.
type UniWebSocket struct {
	Enabled       bool   `key:"enabled" help:"Serve the unidirectional WebSocket endpoint."`
	HandlerPrefix string `key:"handler_prefix" default:"/connection/uni_websocket" help:"URL path of the endpoint."`
	WebSocketConnections
	JoinPushMessages bool `key:"join_push_messages" help:"Put several pushes into one frame, newline- or length-delimited; the client must expect it."`
}

// WebSocketConnections are the keys both WebSocket transports have: how
// their connections compress, read and write.
type WebSocketConnections struct {
	Compression                  bool          `key:"compression" help:"Accept permessage-deflate (RFC 7692) when the client offers it, without context takeover either way; each publication is compressed once for every connection that negotiated it."`
	CompressionMinSize           int           `key:"compression_min_size" min:"0" help:"Smallest message, in bytes, that is compressed; shorter ones go as they are."`
	CompressionLevel             int           `key:"compression_level" default:"1" min:"-2" max:"9" help:"Deflate level: 1 fastest, 9 smallest, -2 Huffman only; 0 means 1."`
	ReadBufferSize               int           `key:"read_buffer_size" help:"Read buffer per connection in bytes; 0 uses the transport's default." unsupported:"Gyre reads frames from a small pooled buffer that grows only for large messages; remove the key and bound memory with message_size_limit."`
	UseWriteBufferPool           bool          `key:"use_write_buffer_pool" help:"Share write buffers between connections, saving memory on mostly idle connections. Gyre always does: true is what it does anyway."`
	WriteBufferSize              int           `key:"write_buffer_size" help:"Write buffer per connection in bytes; 0 uses the transport's default." unsupported:"Gyre writes frames from pooled buffers sized to each message; remove the key."`
	WriteTimeout                 time.Duration `key:"write_timeout" default:"1s" min:"1ns" help:"Longest a write to one connection may take before it is closed."`
	MessageSizeLimit             int           `key:"message_size_limit" default:"65536" help:"Largest incoming message in bytes (on uni_websocket, the connect request); a larger one closes the connection with 1009. 0 means the default, 64 KiB, as in Centrifugo."`
	DecompressedMessageSizeLimit int           `key:"decompressed_message_size_limit" min:"0" help:"Largest size, in bytes, a message the client compressed (permessage-deflate) may inflate to; past it the connection is closed with 1009. 0 means message_size_limit (Centrifugo takes 10 times message_size_limit for 0: set it to that for the same bound). The compressed message itself is held to about message_size_limit either way."`
}

// SSE configures bidirectional emulation over Server-Sent Events.
type SSE struct {
	Enabled            bool   `key:"enabled" help:"Serve the SSE endpoint."`
	HandlerPrefix      string `key:"handler_prefix" default:"/connection/sse" help:"URL path of the endpoint."`
	MaxRequestBodySize int    `key:"max_request_body_size" default:"65536" min:"1" help:"Largest request body in bytes."`
}

// HTTPStream configures bidirectional emulation over HTTP streaming.
type HTTPStream struct {
	Enabled            bool   `key:"enabled" help:"Serve the HTTP streaming endpoint."`
	HandlerPrefix      string `key:"handler_prefix" default:"/connection/http_stream" help:"URL path of the endpoint."`
	MaxRequestBodySize int    `key:"max_request_body_size" default:"65536" min:"1" help:"Largest request body in bytes."`
}

// UniSSE configures the unidirectional Server-Sent Events transport.
type UniSSE struct {
	Enabled                   bool          `key:"enabled" help:"Serve the unidirectional SSE endpoint."`
	HandlerPrefix             string        `key:"handler_prefix" default:"/connection/uni_sse" help:"URL path of the endpoint."`
	MaxRequestBodySize        int           `key:"max_request_body_size" default:"65536" min:"1" help:"Largest body of a POST connect request in bytes."`
	ConnectCodeToHTTPResponse Unimplemented `key:"connect_code_to_http_response" help:"Mapping of connect error codes to HTTP responses." unsupported:"Gyre answers a refused connect with the error in the stream; map codes in the client if it needs HTTP statuses."`
}

// UniHTTPStream configures the unidirectional HTTP streaming transport.
type UniHTTPStream struct {
	Enabled                   bool          `key:"enabled" help:"Serve the unidirectional HTTP streaming endpoint."`
	HandlerPrefix             string        `key:"handler_prefix" default:"/connection/uni_http_stream" help:"URL path of the endpoint."`
	MaxRequestBodySize        int           `key:"max_request_body_size" default:"65536" min:"1" help:"Largest connect request body in bytes."`
	ConnectCodeToHTTPResponse Unimplemented `key:"connect_code_to_http_response" help:"Mapping of connect error codes to HTTP responses." unsupported:"Gyre answers a refused connect with the error in the stream; map codes in the client if it needs HTTP statuses."`
}

// UniGRPC configures the unidirectional gRPC transport.
type UniGRPC struct {
	Enabled               bool   `key:"enabled" help:"Serve the unidirectional gRPC transport (service centrifugal.centrifugo.unistream.CentrifugoUniStream)."`
	Address               string `key:"address" help:"Interface address of the uni_grpc server; empty listens on all."`
	Port                  int    `key:"port" default:"11000" max:"65535" help:"Port of the uni_grpc server."`
	MaxReceiveMessageSize int    `key:"max_receive_message_size" help:"Largest ConnectRequest a consumer may send, in bytes; 0 uses gRPC's default (4 MiB). A larger one ends the call with RESOURCE_EXHAUSTED."`
	TLS                   TLS    `key:"tls" help:"TLS of the uni_grpc server; plain HTTP/2 when off."`
}

// Emulation configures the endpoint that takes commands of emulated
// bidirectional connections.
type Emulation struct {
	HandlerPrefix      string `key:"handler_prefix" default:"/emulation" help:"URL path of the emulation endpoint."`
	MaxRequestBodySize int    `key:"max_request_body_size" default:"65536" min:"1" help:"Largest request body in bytes."`
}
