package server

import (
	"sync/atomic"

	"github.com/gyrehq/gyre/server/config"
)

// sharedPollChannels tells which channels are in shared_poll namespaces:
// for the server API, which refuses to publish into them (the engine's
// publish knows only map channels as taking no publications), and for
// the track handler. Reload replaces it, as the node's channel rules.
type sharedPollChannels struct {
	cfg *config.Config // its boundary and private prefix name a channel's namespace
	// none: no shared_poll namespace, the common case, answered at once.
	none             bool
	withoutNamespace bool
	namespaces       map[string]bool
}

func newSharedPollChannels(c *config.Config) *sharedPollChannels {
	s := &sharedPollChannels{cfg: c, withoutNamespace: c.Channel.WithoutNamespace.IsSharedPoll(), namespaces: map[string]bool{}}
	for i := range c.Channel.Namespaces {
		if ns := &c.Channel.Namespaces[i]; ns.IsSharedPoll() {
			s.namespaces[ns.Name] = true
		}
	}
	s.none = !s.withoutNamespace && len(s.namespaces) == 0
	return s
}

// has reports whether channel is in a shared_poll namespace.
func (s *sharedPollChannels) has(channel string) bool {
	if s.none {
		return false
	}
	ns := channelNamespace(s.cfg, channel)
	if ns == "" {
		return s.withoutNamespace
	}
	return s.namespaces[ns]
}

// sharedPollIndex holds the current sharedPollChannels.
type sharedPollIndex struct {
	p atomic.Pointer[sharedPollChannels]
}

func (x *sharedPollIndex) set(c *config.Config) { x.p.Store(newSharedPollChannels(c)) }

// has is sharedPollChannels.has of the current configuration; it is the
// API's Config.SharedPoll and the tracker's isSharedPoll.
func (x *sharedPollIndex) has(channel string) bool { return x.p.Load().has(channel) }
