package proxy

import (
	"context"
	"fmt"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
)

// MapPublish asks the backend about a client's write of a key into a map
// channel. The backend refuses it with an error or a disconnect, or lets
// it through, changing what its result sets: the key, the value (data or
// b64data), tags, score, key_mode, idempotency_key, delta and version. An
// empty result writes what the client sent; the engine then writes the
// key (the backend's word replaces the namespace's allow_publish_* keys).
func (p *Proxy) MapPublish(ctx context.Context, c *gyre.Client, e gyre.MapPublishEvent) (gyre.MapPublishReply, error) {
	req := &proxypb.MapPublishRequest{Channel: e.Channel, Key: e.Key, Meta: p.connMeta(c)}
	req.Client, req.Transport, req.Protocol, req.Encoding, req.User = p.common(c)
	req.Data, req.B64Data = p.payload(e.Data)
	resp := &proxypb.MapPublishResponse{}
	if err := p.do(ctx, "MapPublish", c.ID(), req, resp, nil); err != nil {
		return gyre.MapPublishReply{}, err
	}
	r := resp.Result
	if r == nil {
		return gyre.MapPublishReply{}, nil
	}
	data, err := decodeB64(r.B64Data, r.Data)
	if err != nil {
		return gyre.MapPublishReply{}, p.bad("MapPublish", c.ID(), fmt.Errorf("b64data: %w", err))
	}
	mode := gyre.KeyMode(r.KeyMode)
	switch mode {
	case gyre.KeyModeReplace, gyre.KeyModeIfNew, gyre.KeyModeIfExists:
	default:
		return gyre.MapPublishReply{}, p.bad("MapPublish", c.ID(), fmt.Errorf("key_mode %q: want \"\", \"if_new\" or \"if_exists\"", r.KeyMode))
	}
	return gyre.MapPublishReply{Key: r.Key, Options: gyre.MapPublishOptions{
		Data: data, Tags: r.Tags, Score: r.Score, KeyMode: mode,
		IdempotencyKey: r.IdempotencyKey, UseDelta: r.Delta,
		Version: r.Version, VersionEpoch: r.VersionEpoch,
	}}, nil
}

// MapRemove asks the backend about a client's removal of a key from a map
// channel: it refuses it, or lets it through with, optionally, another key
// and an idempotency_key.
func (p *Proxy) MapRemove(ctx context.Context, c *gyre.Client, e gyre.MapRemoveEvent) (gyre.MapRemoveReply, error) {
	req := &proxypb.MapRemoveRequest{Channel: e.Channel, Key: e.Key, Meta: p.connMeta(c)}
	req.Client, req.Transport, req.Protocol, req.Encoding, req.User = p.common(c)
	resp := &proxypb.MapRemoveResponse{}
	if err := p.do(ctx, "MapRemove", c.ID(), req, resp, nil); err != nil {
		return gyre.MapRemoveReply{}, err
	}
	r := resp.Result
	if r == nil {
		return gyre.MapRemoveReply{}, nil
	}
	return gyre.MapRemoveReply{Key: r.Key, Options: gyre.MapRemoveOptions{IdempotencyKey: r.IdempotencyKey}}, nil
}
