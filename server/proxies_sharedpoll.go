package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/faillog"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/proxy"
	"github.com/gyrehq/gyre/sharedpoll"
)

// sharedPoll registers what shared_poll namespaces need: the proxies that
// poll their keys, by route (the engine passes a namespace's route with
// each refresh), and the check of the signatures clients track keys
// with. Without a shared_poll namespace it registers nothing, and the
// engine refuses every track.
func (p *proxies) sharedPoll() error {
	routes, err := p.sharedPollRoutes()
	if err != nil || len(routes) == 0 {
		return err
	}
	p.s.node.OnSharedPollRefresh(routes.refresh)
	sp := p.cfg.SharedPoll
	t := &tracker{
		isSharedPoll: p.s.sharedPoll.has,
		verifier:     sharedpoll.NewVerifier(sp.HMACSecretKey, sp.HMACPreviousSecretKey, sp.HMACPreviousSecretKeyValidUntil),
		fails:        faillog.New(p.s.log),
		now:          time.Now,
	}
	p.s.node.OnTrack(t.track)
	return nil
}

// sharedPollRouter is the proxies of the shared_poll namespaces by route
// ("" for channel.proxy.shared_poll_refresh, else a name from proxies).
type sharedPollRouter map[string]*proxy.Proxy

// sharedPollRoutes builds the proxy of every shared_poll namespace's
// route.
func (p *proxies) sharedPollRoutes() (sharedPollRouter, error) {
	ch := &p.cfg.Channel
	routes := sharedPollRouter{}
	each := func(o *config.ChannelOptions) error {
		if !o.IsSharedPoll() {
			return nil
		}
		route := sharedPollRoute(o.SharedPoll)
		if routes[route] != nil {
			return nil
		}
		pr, err := p.pick(o.SharedPoll.ProxyName, "channel.proxy.shared_poll_refresh", ch.Proxy.SharedPollRefresh)
		if err != nil {
			return err
		}
		routes[route] = pr
		return nil
	}
	if err := each(&ch.WithoutNamespace); err != nil {
		return nil, err
	}
	for i := range ch.Namespaces {
		if err := each(&ch.Namespaces[i].ChannelOptions); err != nil {
			return nil, err
		}
	}
	return routes, nil
}

// refresh polls the backend of e's route.
func (r sharedPollRouter) refresh(ctx context.Context, e gyre.SharedPollRefreshEvent) (gyre.SharedPollRefreshReply, error) {
	pr := r[e.Route]
	if pr == nil {
		// The proxies are built at start: a namespace whose proxy_name a
		// reload changed polls nothing until a restart (Reload says so).
		return gyre.SharedPollRefreshReply{}, fmt.Errorf("server: shared poll of %s: no proxy %q was set up at start", e.Channel, e.Route)
	}
	return pr.SharedPollRefresh(ctx, e)
}

// tracker decides clients' track commands by the signatures of their
// batches of keys (shared_poll.hmac_secret_key).
type tracker struct {
	// isSharedPoll tells the channels of shared_poll namespaces, as the
	// running configuration has them (Reload changes them).
	isSharedPoll func(channel string) bool
	verifier     *sharedpoll.Verifier
	// fails rate-limits the lines of refused signatures: each is one
	// client's command, and a client may send them by the thousand.
	fails *faillog.Log
	now   func() time.Time
}

// track checks every batch of e for c's user (anonymous clients sign
// with the user ""): one bad signature refuses the whole command with
// 103, one expired with 109, as the client then asks the backend for new
// ones. A channel outside the shared_poll namespaces is refused with 103.
func (t *tracker) track(_ context.Context, c *gyre.Client, e gyre.TrackEvent) (gyre.TrackReply, error) {
	return t.decide(c.ID(), c.UserID(), e)
}

// decide is track for the client of id client, of user.
func (t *tracker) decide(client, user string, e gyre.TrackEvent) (gyre.TrackReply, error) {
	if !t.isSharedPoll(e.Channel) {
		return gyre.TrackReply{}, gyre.ErrorPermissionDenied
	}
	now := t.now()
	rep := gyre.TrackReply{ExpireAt: make([]int64, len(e.Batches))}
	for i, b := range e.Batches {
		exp, err := t.verifier.Verify(b.Signature, user, e.Channel, b.Keys, now)
		switch {
		case errors.Is(err, sharedpoll.ErrExpired):
			t.fails.Add("track expired signature", slog.LevelInfo, "track refused: signature expired",
				"channel", e.Channel, "client", client, "user", user, "batch", i)
			return gyre.TrackReply{}, gyre.ErrorTokenExpired
		case err != nil:
			t.fails.Add("track bad signature", slog.LevelInfo, "track refused: bad signature",
				"channel", e.Channel, "client", client, "user", user, "batch", i)
			return gyre.TrackReply{}, gyre.ErrorPermissionDenied
		}
		rep.ExpireAt[i] = exp
	}
	return rep, nil
}
