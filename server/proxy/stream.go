package proxy

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
	"github.com/gyrehq/gyre/server/proxy/substream"
)

// errNotGRPC refuses a subscription stream on an HTTP proxy; config
// validation keeps such a configuration from starting.
var errNotGRPC = errors.New("subscription streams need a grpc:// endpoint")

// SubscribeStream answers a client's subscribe with a subscription stream
// on the backend (SubscribeUnidirectional, or SubscribeBidirectional when
// bidirectional): the backend's first message decides the subscribe like
// Subscribe's response, and its later ones are publications for this
// client alone (docs/proxy.md, "Subscription streams"). The request, its
// forwarded headers and metadata are those of Subscribe.
func (p *Proxy) SubscribeStream(ctx context.Context, c *gyre.Client, e gyre.SubscribeEvent, bidirectional bool) (gyre.SubscribeReply, error) {
	const typ = "subscribe_stream"
	p.calls.CallStarted(typ)
	start := time.Now()
	defer func() { p.calls.CallDone(typ, time.Since(start)) }()
	if p.stream == nil {
		return gyre.SubscribeReply{}, p.bad("SubscribeStream", c.ID(), errNotGRPC)
	}
	call := substream.Call{Request: p.subscribeRequest(c, e), Bidirectional: bidirectional, Done: c.Done()}
	hdr := p.forwarded(ctx, nil)
	var span trace.Span
	if p.trace.tracer != nil {
		// The span covers the call until the backend's answer, as the
		// metrics do; the stream lives on after it.
		ctx, span, hdr = p.trace.start(ctx, typ, e.Channel, hdr)
	}
	if len(hdr) > 0 {
		call.Metadata = outgoing(hdr)
	}
	answered := false
	rep, err := p.stream.Subscribe(ctx, call, func(resp *proxypb.SubscribeResponse) (gyre.SubscribeReply, error) {
		answered = true
		if err := refusal(resp); err != nil {
			return gyre.SubscribeReply{}, err
		}
		return p.subscribeReply("SubscribeStream", c.ID(), resp.GetResult())
	})
	// A stream that gave no answer failed, unless the client went away;
	// an answer that could not be used was counted by bad.
	failed := err != nil && !answered && !errors.Is(err, gyre.DisconnectConnectionClosed)
	if failed {
		p.calls.CallFailed(typ)
	}
	if span != nil {
		var spanErr error
		if failed {
			spanErr = err
		}
		p.trace.end(span, spanErr, true)
	}
	return rep, err
}
