package proxy

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/faillog"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
	"github.com/gyrehq/gyre/server/proxy/substream"
)

// caller sends one call of the proxy service and decodes its response.
type caller interface {
	call(ctx context.Context, method string, req, resp proto.Message, hdr map[string]string) error
}

// Proxy is one backend endpoint. Its methods have the signatures of the
// engine's handlers (with the Proxy bound), and are safe for concurrent
// use.
type Proxy struct {
	name     string
	endpoint string
	timeout  time.Duration
	headers  []string // canonical header names
	metadata []string // lower-case metadata keys
	emulated []string // lower-case names of emulated headers forwarded
	b64      bool
	meta     bool
	http     bool
	caller   caller
	// stream opens subscription streams; nil unless the endpoint is
	// grpc://.
	stream *substream.Proxy
	log    *slog.Logger
	// fails rate-limits the lines of failed calls, per call and kind of
	// failure: with the backend down every call fails.
	fails *faillog.Log
	calls CallObserver
	trace tracing
	// tls is the client TLS of the endpoint, for others reaching it.
	tls *tls.Config
}

// New returns the proxy cfg describes. gRPC endpoints take their
// connection from pool.
func New(cfg Config, pool *Pool) (*Proxy, error) {
	p := &Proxy{
		name:     cfg.Name,
		endpoint: cfg.Endpoint,
		timeout:  cfg.Timeout,
		b64:      cfg.BinaryEncoding,
		meta:     cfg.IncludeConnectionMeta,
		log:      cfg.Logger,
		calls:    cfg.Calls,
		tls:      cfg.TLS,
	}
	if p.calls == nil {
		p.calls = noCalls{}
	}
	if p.timeout <= 0 {
		p.timeout = defaultTimeout
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.fails = faillog.New(p.log)
	for _, h := range cfg.HTTPHeaders {
		p.headers = append(p.headers, http.CanonicalHeaderKey(h))
	}
	for _, m := range cfg.GRPCMetadata {
		p.metadata = append(p.metadata, strings.ToLower(m))
	}
	for _, h := range cfg.EmulatedHeaders {
		p.emulated = append(p.emulated, strings.ToLower(h))
	}
	switch {
	case strings.HasPrefix(cfg.Endpoint, "http://"), strings.HasPrefix(cfg.Endpoint, "https://"):
		p.http = true
		p.caller = newHTTPCaller(cfg)
		p.trace = newTracing(cfg, true)
	case strings.HasPrefix(cfg.Endpoint, "grpc://"):
		g, err := newGRPCCaller(cfg, pool)
		if err != nil {
			return nil, err
		}
		p.caller = g
		p.trace = newTracing(cfg, false)
		p.stream, err = substream.New(substream.Config{
			Name: p.name, Conn: g.conn, Timeout: p.timeout, CallOptions: g.opts, Logger: p.log,
		})
		if err != nil {
			return nil, fmt.Errorf("proxy %s: %w", cfg.Name, err)
		}
	default:
		return nil, fmt.Errorf("proxy %s: endpoint %q: want http://, https:// or grpc://", cfg.Name, cfg.Endpoint)
	}
	return p, nil
}

// TLS is the client TLS of the proxy's https:// or grpc:// endpoint; nil
// without one.
func (p *Proxy) TLS() *tls.Config { return p.tls }

// Name is the proxy's name in logs.
func (p *Proxy) Name() string { return p.name }

// GRPCConn is the proxy's connection to a grpc:// endpoint (nil for HTTP
// endpoints), shared with the other proxies of the endpoint; streaming
// calls of the proxy service (subscription streams) use it.
func (p *Proxy) GRPCConn() *grpc.ClientConn {
	if g, ok := p.caller.(*grpcCaller); ok {
		return g.conn
	}
	return nil
}

// response is a response of the proxy service: besides its result, each
// may carry an error or a disconnect.
type response interface {
	proto.Message
	GetError() *proxypb.Error
	GetDisconnect() *proxypb.Disconnect
}

// errFailed marks a call that failed on the way (the backend down, slow,
// a bad status or body), as opposed to one the backend refused. It is
// gyre.ErrorInternal to errors.Is: the engine sends it as 100 and, the
// failure being logged here, logs nothing more.
var errFailed error = failedCall{}

type failedCall struct{}

func (failedCall) Error() string        { return "proxy call failed" }
func (failedCall) Is(target error) bool { return target == gyre.ErrorInternal }

// do runs one call. A refusal by the backend (an error or disconnect in
// the response, or a transformed HTTP status) comes back as the engine's
// *gyre.Error or *gyre.Disconnect; a failure is logged and comes back
// wrapping errFailed.
func (p *Proxy) do(ctx context.Context, method, client string, req proto.Message, resp response, emulated map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	typ := callType(method)
	p.calls.CallStarted(typ)
	start := time.Now()
	hdr := p.forwarded(ctx, emulated)
	var span trace.Span
	if p.trace.tracer != nil {
		ctx, span, hdr = p.trace.start(ctx, typ, channelOf(req), hdr)
	}
	err := p.caller.call(ctx, method, req, resp, hdr)
	p.calls.CallDone(typ, time.Since(start))
	if span != nil {
		p.trace.end(span, err, !p.http)
	}
	if err != nil {
		var t *transformed
		if errors.As(err, &t) {
			p.logCall(method, "transformed", slog.LevelInfo, "proxy: backend status transformed", "client", client, "status", t.status, "to", t.err)
			return t.err
		}
		p.calls.CallFailed(typ)
		p.logCall(method, "failed", slog.LevelError, "proxy: call failed", "endpoint", p.endpoint, "client", client, "error", err)
		return fmt.Errorf("%w: %s %s: %w", errFailed, p.name, method, err)
	}
	return refusal(resp)
}

// refusal is the backend's refusal in resp as the engine's *gyre.Disconnect
// or *gyre.Error; nil when it accepts.
func refusal(resp response) error {
	if d := resp.GetDisconnect(); d != nil {
		return &gyre.Disconnect{Code: d.Code, Reason: d.Reason}
	}
	if e := resp.GetError(); e != nil {
		return &gyre.Error{Code: e.Code, Message: e.Message, Temporary: e.Temporary}
	}
	return nil
}

// unapplied logs the fields of a result that Gyre does not apply, so that
// a backend relying on them learns why the client is refused later (a
// capability it granted) or why an option has no effect.
func (p *Proxy) unapplied(method, client string, fields ...string) {
	if len(fields) > 0 {
		p.logCall(method, "unapplied", slog.LevelWarn, "proxy: result fields Gyre does not apply", "client", client, "fields", fields)
	}
}

// callType is the type of a call of the proxy service's method, for
// metrics.
func callType(method string) string {
	switch method {
	case "Connect":
		return "connect"
	case "Refresh":
		return "refresh"
	case "Subscribe":
		return "subscribe"
	case "Publish":
		return "publish"
	case "SubRefresh":
		return "sub_refresh"
	case "RPC":
		return "rpc"
	case "SubscribeStream":
		return "subscribe_stream"
	case "MapPublish":
		return "map_publish"
	case "MapRemove":
		return "map_remove"
	case "NotifyCacheEmpty":
		return "cache_empty"
	case "SharedPollRefresh":
		return "shared_poll_refresh"
	}
	return strings.ToLower(method)
}

// bad logs a response the engine cannot use and returns the failure.
func (p *Proxy) bad(method, client string, err error) error {
	p.calls.CallFailed(callType(method))
	p.logCall(method, "invalid", slog.LevelError, "proxy: invalid response", "endpoint", p.endpoint, "client", client, "error", err)
	return fmt.Errorf("%w: %s %s: %w", errFailed, p.name, method, err)
}

// logCall writes the line of one call of method that went wrong in the
// way what says, rate-limited per proxy, method and what: the first few
// of a second one by one, then the count of the rest.
func (p *Proxy) logCall(method, what string, level slog.Level, msg string, attrs ...any) {
	p.fails.Add(method+" "+what, level, msg, append([]any{"proxy", p.name, "call", method}, attrs...)...)
}

// encoding is the request's encoding field: "binary" when payloads go in
// the b64 fields.
func (p *Proxy) encoding() string {
	if p.b64 {
		return "binary"
	}
	return "json"
}

// payload places data in the request: raw, or base64 when binary_encoding
// is on. A payload that is not JSON (a protobuf client's binary data) goes
// base64 over HTTP whatever the setting, since raw it would break the
// JSON body.
func (p *Proxy) payload(data []byte) (raw []byte, b64 string) {
	if len(data) == 0 {
		return nil, ""
	}
	if p.b64 || (p.http && !json.Valid(data)) {
		return nil, base64.StdEncoding.EncodeToString(data)
	}
	return data, ""
}

// connMeta is the connection's meta when the proxy sends it.
func (p *Proxy) connMeta(c *gyre.Client) []byte {
	if !p.meta {
		return nil
	}
	m := c.Meta()
	if p.http && !json.Valid(m) {
		return nil
	}
	return m
}

// Connect asks the backend about a connection. The engine calls it for
// connections without a token (see the server's wiring); an empty reply
// (no result) leaves the connection to the node's anonymous rules.
func (p *Proxy) Connect(ctx context.Context, e gyre.ConnectingEvent) (gyre.ConnectingReply, error) {
	req := &proxypb.ConnectRequest{
		Client: e.ClientID, Transport: e.Transport, Protocol: e.Protocol.String(), Encoding: p.encoding(),
		Name: e.Name, Version: e.Version, Channels: e.Channels,
	}
	req.Data, req.B64Data = p.payload(e.Data)
	resp := &proxypb.ConnectResponse{}
	if err := p.do(ctx, "Connect", e.ClientID, req, resp, e.Headers); err != nil {
		return gyre.ConnectingReply{}, err
	}
	r := resp.Result
	if r == nil {
		return gyre.ConnectingReply{}, nil
	}
	info, err := decodeB64(r.B64Info, r.Info)
	if err != nil {
		return gyre.ConnectingReply{}, p.bad("Connect", e.ClientID, fmt.Errorf("b64info: %w", err))
	}
	data, err := decodeB64(r.B64Data, r.Data)
	if err != nil {
		return gyre.ConnectingReply{}, p.bad("Connect", e.ClientID, fmt.Errorf("b64data: %w", err))
	}
	rep := gyre.ConnectingReply{
		Credentials: &gyre.Credentials{UserID: r.User, ExpireAt: r.ExpireAt, Info: info},
		Data:        data,
		Channels:    r.Channels,
		Meta:        r.Meta,
	}
	var unapplied []string
	if len(r.Caps) > 0 {
		unapplied = append(unapplied, "caps")
	}
	for ch, o := range r.Subs {
		if o == nil {
			continue
		}
		if o.ExpireAt != 0 {
			unapplied = append(unapplied, "subs."+ch+".expire_at")
		}
		if o.ServerTagsFilter != nil {
			unapplied = append(unapplied, "subs."+ch+".server_tags_filter")
		}
		chInfo, err := decodeB64(o.B64Info, o.Info)
		if err == nil {
			data, err = decodeB64(o.B64Data, o.Data)
		}
		if err != nil {
			return gyre.ConnectingReply{}, p.bad("Connect", e.ClientID, fmt.Errorf("subs %q: %w", ch, err))
		}
		if rep.Subscriptions == nil {
			rep.Subscriptions = make(map[string]gyre.SubscribeOptions, len(r.Subs))
		}
		rep.Subscriptions[ch] = gyre.SubscribeOptions{ChanInfo: chInfo, Data: data, Override: override(o.Override)}
	}
	p.unapplied("Connect", e.ClientID, unapplied...)
	return rep, nil
}

// request fields every call but connect carries.
func (p *Proxy) common(c *gyre.Client) (client, transport, protocol, encoding, user string) {
	t := c.Transport()
	return c.ID(), t.Name(), t.Protocol().String(), p.encoding(), c.UserID()
}

// Refresh asks the backend whether an expiring connection lives on. An
// error or disconnect in the response counts as a failure (the engine
// asks again later), as in Centrifugo, which applies neither to refresh.
func (p *Proxy) Refresh(ctx context.Context, c *gyre.Client, _ gyre.RefreshEvent) (gyre.RefreshReply, error) {
	req := &proxypb.RefreshRequest{Meta: p.connMeta(c)}
	req.Client, req.Transport, req.Protocol, req.Encoding, req.User = p.common(c)
	resp := &proxypb.RefreshResponse{}
	if err := p.do(ctx, "Refresh", c.ID(), req, resp, nil); err != nil {
		return gyre.RefreshReply{}, p.notForRefresh("Refresh", c.ID(), err)
	}
	r := resp.Result
	if r == nil {
		return gyre.RefreshReply{}, p.bad("Refresh", c.ID(), errors.New("no result"))
	}
	info, err := decodeB64(r.B64Info, r.Info)
	if err != nil {
		return gyre.RefreshReply{}, p.bad("Refresh", c.ID(), fmt.Errorf("b64info: %w", err))
	}
	if len(r.Caps) > 0 {
		p.unapplied("Refresh", c.ID(), "caps")
	}
	return gyre.RefreshReply{Expired: r.Expired, ExpireAt: r.ExpireAt, Info: info, Meta: r.Meta}, nil
}

// notForRefresh keeps an error or disconnect answered to a refresh from
// reaching the engine as one: the engine would act on a disconnect, which
// Centrifugo's refresh proxies do not. The engine asks again later.
func (p *Proxy) notForRefresh(method, client string, err error) error {
	var d *gyre.Disconnect
	var e *gyre.Error
	if errors.Is(err, errFailed) || !errors.As(err, &d) && !errors.As(err, &e) {
		return err
	}
	p.logCall(method, "refused", slog.LevelInfo, "proxy: refresh answered with an error or disconnect, which a refresh does not apply; asked again later", "client", client, "answer", err)
	return fmt.Errorf("%w: backend answered %v", errFailed, err)
}

// Subscribe asks the backend about a subscribe command.
func (p *Proxy) Subscribe(ctx context.Context, c *gyre.Client, e gyre.SubscribeEvent) (gyre.SubscribeReply, error) {
	resp := &proxypb.SubscribeResponse{}
	if err := p.do(ctx, "Subscribe", c.ID(), p.subscribeRequest(c, e), resp, nil); err != nil {
		return gyre.SubscribeReply{}, err
	}
	return p.subscribeReply("Subscribe", c.ID(), resp.Result)
}

// subscribeRequest is what the backend is sent for a subscribe, as a call
// or as the start of a stream.
func (p *Proxy) subscribeRequest(c *gyre.Client, e gyre.SubscribeEvent) *proxypb.SubscribeRequest {
	req := &proxypb.SubscribeRequest{Channel: e.Channel, Token: e.Token, Meta: p.connMeta(c)}
	req.Client, req.Transport, req.Protocol, req.Encoding, req.User = p.common(c)
	req.Data, req.B64Data = p.payload(e.Data)
	return req
}

// subscribeReply turns the backend's subscribe result into the engine's
// reply; no result accepts the subscription as the channel is.
func (p *Proxy) subscribeReply(method, client string, r *proxypb.SubscribeResult) (gyre.SubscribeReply, error) {
	if r == nil {
		return gyre.SubscribeReply{}, nil
	}
	info, err := decodeB64(r.B64Info, r.Info)
	if err != nil {
		return gyre.SubscribeReply{}, p.bad(method, client, fmt.Errorf("b64info: %w", err))
	}
	data, err := decodeB64(r.B64Data, r.Data)
	if err != nil {
		return gyre.SubscribeReply{}, p.bad(method, client, fmt.Errorf("b64data: %w", err))
	}
	if len(r.Allow) > 0 {
		p.unapplied(method, client, "allow")
	}
	return gyre.SubscribeReply{
		ChanInfo: info, Data: data, ExpireAt: r.ExpireAt,
		Override: override(r.Override), Filter: filterNode(r.ServerTagsFilter),
	}, nil
}

// Publish asks the backend about a client's publication, which it may
// rewrite.
func (p *Proxy) Publish(ctx context.Context, c *gyre.Client, e gyre.PublishEvent) (gyre.PublishReply, error) {
	req := &proxypb.PublishRequest{Channel: e.Channel, Meta: p.connMeta(c)}
	req.Client, req.Transport, req.Protocol, req.Encoding, req.User = p.common(c)
	req.Data, req.B64Data = p.payload(e.Data)
	resp := &proxypb.PublishResponse{}
	if err := p.do(ctx, "Publish", c.ID(), req, resp, nil); err != nil {
		return gyre.PublishReply{}, err
	}
	r := resp.Result
	if r == nil {
		return gyre.PublishReply{}, nil
	}
	data, err := decodeB64(r.B64Data, r.Data)
	if err != nil {
		return gyre.PublishReply{}, p.bad("Publish", c.ID(), fmt.Errorf("b64data: %w", err))
	}
	return gyre.PublishReply{
		Data: data, Tags: r.Tags, SkipHistory: r.SkipHistory,
		IdempotencyKey: r.IdempotencyKey, Delta: r.Delta,
		Version: r.Version, VersionEpoch: r.VersionEpoch,
	}, nil
}

// SubRefresh asks the backend whether an expiring subscription lives on.
func (p *Proxy) SubRefresh(ctx context.Context, c *gyre.Client, e gyre.SubRefreshEvent) (gyre.SubRefreshReply, error) {
	req := &proxypb.SubRefreshRequest{Channel: e.Channel, Meta: p.connMeta(c)}
	req.Client, req.Transport, req.Protocol, req.Encoding, req.User = p.common(c)
	resp := &proxypb.SubRefreshResponse{}
	if err := p.do(ctx, "SubRefresh", c.ID(), req, resp, nil); err != nil {
		return gyre.SubRefreshReply{}, p.notForRefresh("SubRefresh", c.ID(), err)
	}
	r := resp.Result
	if r == nil {
		return gyre.SubRefreshReply{}, p.bad("SubRefresh", c.ID(), errors.New("no result"))
	}
	info, err := decodeB64(r.B64Info, r.Info)
	if err != nil {
		return gyre.SubRefreshReply{}, p.bad("SubRefresh", c.ID(), fmt.Errorf("b64info: %w", err))
	}
	return gyre.SubRefreshReply{Expired: r.Expired, ExpireAt: r.ExpireAt, Info: info}, nil
}

// RPC sends a client's RPC call to the backend.
func (p *Proxy) RPC(ctx context.Context, c *gyre.Client, e gyre.RPCEvent) (gyre.RPCReply, error) {
	req := &proxypb.RPCRequest{Method: e.Method, Meta: p.connMeta(c)}
	req.Client, req.Transport, req.Protocol, req.Encoding, req.User = p.common(c)
	req.Data, req.B64Data = p.payload(e.Data)
	resp := &proxypb.RPCResponse{}
	if err := p.do(ctx, "RPC", c.ID(), req, resp, nil); err != nil {
		return gyre.RPCReply{}, err
	}
	r := resp.Result
	if r == nil {
		return gyre.RPCReply{}, nil
	}
	data, err := decodeB64(r.B64Data, r.Data)
	if err != nil {
		return gyre.RPCReply{}, p.bad("RPC", c.ID(), fmt.Errorf("b64data: %w", err))
	}
	return gyre.RPCReply{Data: data}, nil
}

// cacheEmptyResponse is NotifyCacheEmptyResponse as a response: it has
// no disconnect.
type cacheEmptyResponse struct {
	*proxypb.NotifyCacheEmptyResponse
}

func (cacheEmptyResponse) GetDisconnect() *proxypb.Disconnect { return nil }

// CacheEmpty asks the backend to publish the state of channel, whose
// subscriber in cache recovery mode found no publication; populated is
// what it answers. A refusal or a failure is an error: the subscription
// is refused with 100.
func (p *Proxy) CacheEmpty(ctx context.Context, channel string) (populated bool, err error) {
	req := &proxypb.NotifyCacheEmptyRequest{Channel: channel}
	resp := cacheEmptyResponse{&proxypb.NotifyCacheEmptyResponse{}}
	if err := p.do(ctx, "NotifyCacheEmpty", "", req, resp, nil); err != nil {
		return false, err
	}
	return resp.GetResult().GetPopulated(), nil
}
