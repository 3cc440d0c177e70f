package hooks

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sender sends one batch of events to a backend in one request.
type Sender interface {
	// Send returns nil once the backend accepted every event of the
	// batch, which holds events of one kind. Any error means the backend
	// may have got none, some or all of them: the batch is to be sent
	// again, whole.
	Send(ctx context.Context, events []Event) error
}

// SenderConfig describes the backend endpoint of a Sender.
type SenderConfig struct {
	// Endpoint is http://, https:// or grpc://host:port.
	Endpoint string
	// Timeout bounds each request; zero means one second.
	Timeout time.Duration
	// Headers are sent with every request, as HTTP headers or gRPC
	// metadata.
	Headers map[string]string
	// Secret, when set, signs the body of every HTTP request in the
	// SignatureHeader. gRPC requests are not signed: their backend
	// authenticates the connection (TLS, per-call credentials).
	Secret []byte
	// BinaryEncoding sends user info over HTTP base64-encoded in
	// b64info, even when it is JSON.
	BinaryEncoding bool
	// TLS is the client TLS of https:// endpoints; nil uses the system's
	// roots.
	TLS *tls.Config
	// GRPCConn is the connection to a grpc:// endpoint, required for one
	// (proxy.Proxy.GRPCConn shares the proxies' connection, with its TLS
	// and credentials).
	GRPCConn grpc.ClientConnInterface
	// GRPCCompression compresses gRPC requests with gzip.
	GRPCCompression bool
}

const defaultTimeout = time.Second

// NewSender returns the Sender of the endpoint cfg describes.
func NewSender(cfg SenderConfig) (Sender, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultTimeout
	}
	switch {
	case strings.HasPrefix(cfg.Endpoint, "http://"), strings.HasPrefix(cfg.Endpoint, "https://"):
		return newHTTPSender(cfg), nil
	case strings.HasPrefix(cfg.Endpoint, "grpc://"):
		if cfg.GRPCConn == nil {
			return nil, fmt.Errorf("hooks: endpoint %q: no gRPC connection", cfg.Endpoint)
		}
		return newGRPCSender(cfg), nil
	}
	return nil, fmt.Errorf("hooks: endpoint %q: want http://, https:// or grpc://", cfg.Endpoint)
}

// Why a request failed, as Observer.Failed and Record.Reason give it.
const (
	// FailTimeout: no reply within the timeout.
	FailTimeout = "timeout"
	// FailTransport: the backend unreachable or the connection broken.
	FailTransport = "transport"
	// FailStatus: an HTTP status other than 200, or a gRPC status other
	// than OK, Unavailable or DeadlineExceeded (Unimplemented: a backend
	// without the call).
	FailStatus = "status"
	// FailBadReply: a reply that does not decode.
	FailBadReply = "bad_reply"
	// FailRefused: an error in the reply.
	FailRefused = "refused"
)

// statusError is an HTTP reply with another status than 200.
type statusError struct{ code int }

func (e *statusError) Error() string { return fmt.Sprintf("unexpected status %d", e.code) }

// refusedError is an error the backend put in its reply.
type refusedError struct {
	code      uint32
	message   string
	temporary bool
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("backend answered error %d: %s", e.code, e.message)
}

// errBadReply marks a reply that does not decode.
var errBadReply = errors.New("malformed reply")

// failReason is the reason of a failed Send, one of the Fail constants.
func failReason(err error) string {
	var refused *refusedError
	var st *statusError
	switch {
	case errors.As(err, &refused):
		return FailRefused
	case errors.Is(err, errBadReply):
		return FailBadReply
	case errors.As(err, &st):
		return FailStatus
	case errors.Is(err, context.DeadlineExceeded):
		return FailTimeout
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.DeadlineExceeded:
			return FailTimeout
		case codes.Unavailable, codes.Canceled, codes.OK:
			return FailTransport
		}
		return FailStatus
	}
	return FailTransport
}

// headerMap is cfg's headers keyed by canonical name, for HTTP.
func headerMap(h map[string]string) http.Header {
	out := make(http.Header, len(h))
	for k, v := range h {
		out.Set(k, v)
	}
	return out
}
