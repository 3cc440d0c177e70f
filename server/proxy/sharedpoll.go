package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
)

// sharedPollResponse is SharedPollRefreshResponse as a response: it has
// no disconnect, there being no client to disconnect.
type sharedPollResponse struct {
	*proxypb.SharedPollRefreshResponse
}

func (sharedPollResponse) GetDisconnect() *proxypb.Disconnect { return nil }

// SharedPollRefresh asks the backend for the current values of keys of a
// shared-poll channel. The call is made for every client tracking the
// keys, so it carries no client, headers or meta; the proxy's static
// headers (HTTP) and credentials (gRPC) go with it as with any call.
//
// An error the backend answers, and an answer the engine cannot use (an
// item without a key), are failures: logged here, counted in the proxy's
// metrics, and returned saying what was wrong; the engine skips the
// batch until its next poll.
func (p *Proxy) SharedPollRefresh(ctx context.Context, e gyre.SharedPollRefreshEvent) (gyre.SharedPollRefreshReply, error) {
	const method = "SharedPollRefresh"
	req := &proxypb.SharedPollRefreshRequest{Channel: e.Channel, Items: make([]*proxypb.SharedPollRefreshItem, len(e.Items))}
	for i, k := range e.Items {
		req.Items[i] = &proxypb.SharedPollRefreshItem{Key: k.Key, Version: k.Version}
	}
	resp := sharedPollResponse{&proxypb.SharedPollRefreshResponse{}}
	if err := p.do(ctx, method, "", req, resp, nil); err != nil {
		if errors.Is(err, errFailed) {
			return gyre.SharedPollRefreshReply{}, err
		}
		// An error (or a status transformed into one) refuses a
		// client's command; with no client, the poll failed.
		p.calls.CallFailed(callType(method))
		p.logCall(method, "refused", slog.LevelWarn, "proxy: backend answered a shared poll refresh with an error", "endpoint", p.endpoint, "channel", e.Channel, "error", err)
		return gyre.SharedPollRefreshReply{}, fmt.Errorf("%w: %s %s: the backend answered with an error: %w", errFailed, p.name, method, err)
	}
	r := resp.GetResult()
	if r == nil {
		// No result: nothing changed, as in Centrifugo (whose versioned
		// namespaces then see the epoch "").
		return gyre.SharedPollRefreshReply{}, nil
	}
	rep := gyre.SharedPollRefreshReply{Epoch: r.Epoch}
	if len(r.Items) > 0 {
		rep.Items = make([]gyre.SharedPollItem, len(r.Items))
	}
	for i, it := range r.Items {
		if it.GetKey() == "" {
			// Over HTTP a value always is JSON (the body would not
			// parse otherwise); a key is what an item may lack.
			return gyre.SharedPollRefreshReply{}, p.bad(method, "", fmt.Errorf("channel %q: result item %d has no key", e.Channel, i))
		}
		rep.Items[i] = gyre.SharedPollItem{Key: it.Key, Data: it.Data, Version: it.Version, Removed: it.Removed}
	}
	return rep, nil
}
