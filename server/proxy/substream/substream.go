// Package substream opens subscription streams on an application backend:
// when a client subscribes to a channel of a namespace with
// subscribe_stream_proxy_enabled, the server calls the backend's
// SubscribeUnidirectional (or, with subscribe_stream_proxy_bidirectional,
// SubscribeBidirectional) of service centrifugal.centrifugo.proxy.CentrifugoProxy
// and keeps the gRPC stream open for as long as the subscription lives.
//
// The backend's first message answers the subscribe; every later one
// carries a publication for this one subscriber, which the engine delivers
// through a gyre.SubscriptionStream (never through the broker, kept in no
// history). On a bidirectional stream the client's publications into the
// channel go to the backend on the same stream. The stream is cancelled
// when the subscription ends; when the backend ends it, the client is
// unsubscribed: with 2000 (server unsubscribe) after a clean end of the
// stream, with 2500 (insufficient state, so that the client subscribes
// again) after an error.
//
// A Proxy uses the gRPC connection it is given (the one of the proxy's
// endpoint, shared with its unary calls); the caller builds each call's
// SubscribeRequest and metadata, as for the unary subscribe proxy.
package substream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/faillog"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
)

// Config configures a Proxy.
type Config struct {
	// Name names the proxy in log lines: "default" or its name in the
	// proxies list.
	Name string
	// Conn is the connection to the backend.
	Conn grpc.ClientConnInterface
	// Timeout bounds the wait for the backend's first message, which
	// answers the subscribe; it must be positive. The stream itself lives
	// as long as the subscription.
	Timeout time.Duration
	// CallOptions are given to every stream call (compression, codec).
	CallOptions []grpc.CallOption
	// Logger receives the proxy's log lines; nil means slog.Default().
	Logger *slog.Logger
}

// Proxy opens subscription streams on one backend. It is safe for
// concurrent use.
type Proxy struct {
	name    string
	client  proxypb.CentrifugoProxyClient
	timeout time.Duration
	opts    []grpc.CallOption
	log     *slog.Logger
	// fails rate-limits the proxy's lines, per message: a backend that is
	// down fails every subscribe, one that misbehaves every message.
	fails *faillog.Log
}

// New returns a Proxy for cfg.
func New(cfg Config) (*Proxy, error) {
	if cfg.Conn == nil {
		return nil, fmt.Errorf("substream: proxy %q: no gRPC connection", cfg.Name)
	}
	if cfg.Timeout <= 0 {
		return nil, fmt.Errorf("substream: proxy %q: timeout must be positive, got %v", cfg.Name, cfg.Timeout)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Proxy{
		name:    cfg.Name,
		client:  proxypb.NewCentrifugoProxyClient(cfg.Conn),
		timeout: cfg.Timeout,
		opts:    cfg.CallOptions,
		log:     log,
		fails:   faillog.New(log),
	}, nil
}

// Call is one subscribe to open a stream for.
type Call struct {
	// Request is sent to the backend: the SubscribeRequest the unary
	// subscribe proxy would send (client, transport, protocol, encoding,
	// user, channel, token, meta, data or b64data).
	Request *proxypb.SubscribeRequest
	// Bidirectional opens SubscribeBidirectional, whose first request
	// carries Request and whose later ones carry the client's
	// publications; else SubscribeUnidirectional.
	Bidirectional bool
	// Metadata is added to the call's outgoing metadata (forwarded
	// headers and metadata, credentials).
	Metadata metadata.MD
	// Done, when set, is closed when the client is gone (Client.Done):
	// the wait for the first message then ends at once instead of at
	// the timeout. A WebSocket client's context never ends, so ctx alone
	// cannot tell.
	Done <-chan struct{}
}

// ResponseFunc turns the backend's answer to a subscribe into the
// subscribe handler's reply: an *gyre.Error for its error, a
// *gyre.Disconnect for its disconnect, else the result's channel info,
// data, expiry and options. The unary subscribe proxy's conversion is
// meant to serve here too.
type ResponseFunc func(*proxypb.SubscribeResponse) (gyre.SubscribeReply, error)

// Subscribe opens the backend stream for a client's subscribe (see
// Open), turns the backend's answer into the reply with convert and sets
// the reply's Stream. It is what a subscribe handler returns for a
// channel whose namespace streams from this proxy. ctx is the subscribe
// handler's; the stream ends with the subscription (or with ctx).
func (p *Proxy) Subscribe(ctx context.Context, call Call, convert ResponseFunc) (gyre.SubscribeReply, error) {
	resp, st, err := p.Open(ctx, call)
	if err != nil {
		return gyre.SubscribeReply{}, err
	}
	rep, err := convert(resp)
	if err != nil || st == nil {
		if st != nil {
			st.Close()
		}
		if err == nil {
			// The backend refused without saying how: convert should
			// have turned its error or disconnect into one.
			err = gyre.ErrorInternal
		}
		return gyre.SubscribeReply{}, err
	}
	rep.Stream = st
	return rep, nil
}

// Open opens the backend stream for a subscribe and waits, at most the
// proxy's timeout, for the backend's first message, whose
// subscribe_response it returns. When that response neither refuses nor
// disconnects, Open returns the stream too, to be set as the subscribe
// reply's Stream (or closed, if the subscribe goes no further); otherwise
// the stream is closed already and nil.
//
// A stream that cannot be opened, a backend that ends it, fails or sends
// no first message in time, and a first message without
// subscribe_response give an error wrapping gyre.ErrorInternal (the
// client gets 100), logged here; a ctx ended meanwhile (the client gone)
// gives gyre.DisconnectConnectionClosed.
func (p *Proxy) Open(ctx context.Context, call Call) (*proxypb.SubscribeResponse, *Stream, error) {
	req := call.Request
	log := callLog{log: p.log, fails: p.fails, attrs: []any{"proxy", p.name, "client", req.GetClient(), "user", req.GetUser(), "channel", req.GetChannel()}}
	if len(call.Metadata) > 0 {
		md, _ := metadata.FromOutgoingContext(ctx)
		ctx = metadata.NewOutgoingContext(ctx, metadata.Join(md, call.Metadata))
	}
	sctx, cancel := context.WithCancel(ctx)
	st := &Stream{cancel: cancel, ctx: sctx, log: log, timeout: p.timeout}
	// The first message must come within the timeout; past it, the
	// stream is cancelled and Recv returns.
	var timedOut, gone atomic.Bool
	timer := time.AfterFunc(p.timeout, func() {
		timedOut.Store(true)
		cancel()
	})
	answered := make(chan struct{})
	if call.Done != nil {
		go func() {
			select {
			case <-call.Done:
				gone.Store(true)
				cancel()
			case <-answered:
			}
		}()
	}
	var first *proxypb.StreamSubscribeResponse
	err := p.openStream(sctx, st, call)
	if err == nil {
		first, err = st.recv()
	}
	timer.Stop()
	close(answered)
	if err != nil {
		cancel()
		switch {
		case gone.Load() || ctx.Err() != nil:
			return nil, nil, gyre.DisconnectConnectionClosed
		case timedOut.Load():
			log.Error("subscription stream: no first message from the backend in time", "timeout", p.timeout)
			return nil, nil, fmt.Errorf("substream: proxy %q: no first message within %v: %w", p.name, p.timeout, gyre.ErrorInternal)
		}
		log.Error("subscription stream: backend call failed", "error", err)
		return nil, nil, fmt.Errorf("substream: proxy %q: %w: %w", p.name, err, gyre.ErrorInternal)
	}
	resp := first.GetSubscribeResponse()
	if resp == nil {
		cancel()
		log.Error("subscription stream: the backend's first message has no subscribe_response")
		return nil, nil, fmt.Errorf("substream: proxy %q: first message without subscribe_response: %w", p.name, gyre.ErrorInternal)
	}
	if resp.GetError() != nil || resp.GetDisconnect() != nil {
		cancel()
		return resp, nil, nil
	}
	st.first = first.GetPublication()
	return resp, st, nil
}

// openStream starts the gRPC call of call on st.
func (p *Proxy) openStream(ctx context.Context, st *Stream, call Call) error {
	if !call.Bidirectional {
		s, err := p.client.SubscribeUnidirectional(ctx, call.Request, p.opts...)
		if err != nil {
			return err
		}
		st.recv = s.Recv
		return nil
	}
	s, err := p.client.SubscribeBidirectional(ctx, p.opts...)
	if err != nil {
		return err
	}
	st.recv, st.send = s.Recv, s.Send
	if err := s.Send(&proxypb.StreamSubscribeRequest{SubscribeRequest: call.Request}); err != nil {
		if errors.Is(err, io.EOF) {
			// The stream broke; Recv tells why.
			_, err = s.Recv()
		}
		return err
	}
	return nil
}

// Stream is one subscription's open backend stream, a
// gyre.SubscriptionStream: Start reads the backend's publications into the
// subscription, Publish sends the client's publications to the backend
// (bidirectional streams), Close cancels the stream.
type Stream struct {
	ctx    context.Context
	cancel context.CancelFunc
	log    callLog
	recv   func() (*proxypb.StreamSubscribeResponse, error)
	// send is nil on a unidirectional stream. gRPC allows one sender at
	// a time: sendMu keeps the client's publications in turn.
	send   func(*proxypb.StreamSubscribeRequest) error
	sendMu sync.Mutex
	// timeout bounds each send: a backend that stops reading would block
	// the client's commands behind flow control. Past it the stream is
	// cancelled, and sendStuck makes its end unsubscribe the client.
	timeout   time.Duration
	sendStuck atomic.Bool
	// first is a publication the backend put in its first message, which
	// carries none by the protocol; it is delivered rather than lost.
	first *proxypb.Publication
}

var _ gyre.SubscriptionStream = (*Stream)(nil)

// Start reads the backend's publications into sub until the stream ends.
func (s *Stream) Start(sub *gyre.StreamSubscription) {
	go s.read(sub)
}

func (s *Stream) read(sub *gyre.StreamSubscription) {
	if s.first != nil && !s.deliver(sub, s.first) {
		s.cancel()
		return
	}
	for {
		msg, err := s.recv()
		if err != nil {
			s.ended(sub, err)
			return
		}
		pub := msg.GetPublication()
		if pub == nil {
			s.log.Info("subscription stream: message without publication from the backend, ignored")
			continue
		}
		if !s.deliver(sub, pub) {
			s.cancel()
			return
		}
	}
}

// deliver hands pub to the subscription; false when the subscription has
// ended (or the client was closed for a payload it cannot take).
func (s *Stream) deliver(sub *gyre.StreamSubscription, pub *proxypb.Publication) bool {
	if err := sub.Publish(pub.GetData(), pub.GetTags()); err != nil {
		if !errors.Is(err, gyre.ErrSubscriptionEnded) {
			s.log.Info("subscription stream: publication not deliverable", "error", err)
		}
		return false
	}
	return true
}

// ended handles the end of the backend's side of the stream: nothing to
// do when the subscription ended first (Close cancelled the stream);
// else the client is unsubscribed, with 2000 when the backend finished
// the stream and 2500 (resubscribe) when it broke.
func (s *Stream) ended(sub *gyre.StreamSubscription, err error) {
	if s.ctx.Err() != nil && !s.sendStuck.Load() {
		// Cancelled: by Close when the subscription ended, or with the
		// caller's context, which ends with the connection.
		return
	}
	select {
	case <-sub.Done():
		return
	default:
	}
	if errors.Is(err, io.EOF) {
		s.log.Debug("subscription stream ended by the backend")
		sub.Unsubscribe(gyre.UnsubscribeCodeServer, "server unsubscribe")
		return
	}
	s.log.Warn("subscription stream broken", "error", err)
	sub.Unsubscribe(gyre.UnsubscribeCodeInsufficientState, "insufficient state")
}

// Publish sends a client's publication to the backend on a bidirectional
// stream; a unidirectional one refuses it with 108.
func (s *Stream) Publish(_ context.Context, data []byte) error {
	if s.send == nil {
		return gyre.ErrorNotAvailable
	}
	s.sendMu.Lock()
	stuck := time.AfterFunc(s.timeout, func() {
		s.sendStuck.Store(true)
		s.cancel()
	})
	err := s.send(&proxypb.StreamSubscribeRequest{Publication: &proxypb.Publication{Data: data}})
	stuck.Stop()
	s.sendMu.Unlock()
	if err != nil {
		if s.sendStuck.Load() {
			s.log.Warn("subscription stream: the backend took no client publication within the timeout; stream cancelled", "timeout", s.timeout)
			return fmt.Errorf("substream: send publication: backend stuck: %w", gyre.ErrorInternal)
		}
		if s.ctx.Err() != nil {
			// The subscription is ending: the publication has nowhere to go.
			return gyre.ErrorNotAvailable
		}
		s.log.Warn("subscription stream: sending a client publication to the backend failed", "error", err)
		return fmt.Errorf("substream: send publication: %w: %w", err, gyre.ErrorInternal)
	}
	return nil
}

// Close cancels the backend stream.
func (s *Stream) Close() { s.cancel() }

// callLog logs the lines of one stream with the attributes naming it
// (proxy, client, user, channel) on every line.
type callLog struct {
	log   *slog.Logger
	fails *faillog.Log
	attrs []any
}

// at writes a line with the call's attributes; lines above debug are
// rate-limited per message, as they can come once per subscribe or per
// message of a stream.
func (l callLog) at(level slog.Level, msg string, args ...any) {
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	attrs := append(append([]any(nil), l.attrs...), args...)
	if level > slog.LevelDebug && l.fails != nil {
		l.fails.Add(msg, level, msg, attrs...)
		return
	}
	l.log.Log(context.Background(), level, msg, attrs...)
}

func (l callLog) Debug(msg string, args ...any) { l.at(slog.LevelDebug, msg, args...) }
func (l callLog) Info(msg string, args ...any)  { l.at(slog.LevelInfo, msg, args...) }
func (l callLog) Warn(msg string, args ...any)  { l.at(slog.LevelWarn, msg, args...) }
func (l callLog) Error(msg string, args ...any) { l.at(slog.LevelError, msg, args...) }
