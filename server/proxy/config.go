package proxy

import (
	"crypto/tls"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre"
)

// Config describes one proxy.
type Config struct {
	// Name identifies the proxy in logs: its name in the proxies list, or
	// its key (client.proxy.connect ...).
	Name string
	// Endpoint is http://, https:// or grpc://host:port.
	Endpoint string
	// Timeout bounds each call; zero means one second.
	Timeout time.Duration
	// HTTPHeaders names the client request headers forwarded (as HTTP
	// headers, or as gRPC metadata); GRPCMetadata names the metadata keys
	// of gRPC clients forwarded.
	HTTPHeaders  []string
	GRPCMetadata []string
	// EmulatedHeaders names the headers a client sent in its connect
	// command (headers emulation) that are forwarded; their values are
	// the client's own. HTTPHeaders never forwards those.
	EmulatedHeaders []string
	// BinaryEncoding sends payloads as base64 (b64data ...) rather than
	// raw JSON.
	BinaryEncoding bool
	// IncludeConnectionMeta sends the connection's meta with each call.
	IncludeConnectionMeta bool
	// StaticHeaders are sent with every call to an http:// or https://
	// endpoint, over forwarded client headers of the same name.
	StaticHeaders map[string]string
	// StatusTransforms turn HTTP statuses of the backend into what the
	// client gets; other statuses than 200 give error 100.
	StatusTransforms []StatusTransform
	// TLS is the client TLS of https:// or grpc:// endpoints; nil dials
	// grpc:// in plain text and https:// with the system's roots.
	TLS *tls.Config
	// GRPCCredentialsKey and GRPCCredentialsValue are sent as metadata
	// with every gRPC call.
	GRPCCredentialsKey   string
	GRPCCredentialsValue string
	// GRPCCompression compresses gRPC calls with gzip.
	GRPCCompression bool
	// Logger receives the failures; nil logs nothing.
	Logger *slog.Logger
	// Calls, when set, is told about every call, for metrics.
	Calls CallObserver
	// TracerProvider, when set, traces the calls: a CLIENT span
	// "proxy <type>" per call, whose W3C traceparent is sent to the
	// backend (HTTP header or gRPC metadata). Nil traces nothing.
	TracerProvider trace.TracerProvider
}

// CallObserver is told about the calls of a proxy. Its methods must be
// safe for concurrent use and must not block.
type CallObserver interface {
	// CallStarted and CallDone bracket one call of a type: "connect",
	// "refresh", "subscribe", "publish", "sub_refresh", "rpc",
	// "map_publish", "map_remove", "cache_empty", "shared_poll_refresh"
	// or "subscribe_stream" (until the stream's first message).
	CallStarted(typ string)
	CallDone(typ string, d time.Duration)
	// CallFailed counts a call that failed on the way: the backend
	// unreachable, too slow, or answering what cannot be used (a bad
	// status or body). A refusal the backend answers is no failure.
	CallFailed(typ string)
}

// noCalls is the CallObserver of a proxy without one.
type noCalls struct{}

func (noCalls) CallStarted(string)             {}
func (noCalls) CallDone(string, time.Duration) {}
func (noCalls) CallFailed(string)              {}

// StatusTransform maps one HTTP status to an error or a disconnect.
type StatusTransform struct {
	StatusCode int
	// Exactly one of Error and Disconnect is set.
	Error      *gyre.Error
	Disconnect *gyre.Disconnect
}

const defaultTimeout = time.Second
