package config

import (
	"slices"
	"strconv"
	"strings"
)

// Shared-poll channels: what their namespaces need to run (the secret of
// the track signatures, a proxy that polls their keys) and Centrifugo's
// rules between their options.

// IsSharedPoll reports whether the channels of o are shared-poll
// channels (subscription_type shared_poll).
func (o *ChannelOptions) IsSharedPoll() bool { return o.SubscriptionType == "shared_poll" }

// sharedPoll checks the shared_poll section and the shared_poll
// namespaces.
func (v *validator) sharedPoll(c *Config) {
	sp := &c.SharedPoll
	switch {
	case sp.HMACPreviousSecretKey == "":
	case sp.HMACSecretKey == "":
		v.fail("shared_poll.hmac_previous_secret_key", "set without hmac_secret_key (the secret that replaced it)")
	case sp.HMACPreviousSecretKey == sp.HMACSecretKey:
		v.fail("shared_poll.hmac_previous_secret_key", "equals hmac_secret_key: a rotation moves the old secret here and sets a new hmac_secret_key")
	}
	var first string // the first shared_poll namespace's path
	each := func(path string, o *ChannelOptions) {
		if !o.IsSharedPoll() {
			return
		}
		if first == "" {
			first = path
		}
		v.sharedPollNamespace(path+".shared_poll", c, &o.SharedPoll)
		v.sharedPollChannels(path, o)
	}
	each("channel.without_namespace", &c.Channel.WithoutNamespace)
	for i := range c.Channel.Namespaces {
		each("channel.namespaces["+strconv.Itoa(i)+"]", &c.Channel.Namespaces[i].ChannelOptions)
	}
	if first != "" && sp.HMACSecretKey == "" {
		v.fail("shared_poll.hmac_secret_key", "is required: %s has subscription_type shared_poll, whose clients track keys with signatures made with this secret", first)
	}
}

// sharedPollNamespace checks the shared_poll options at path of a
// shared_poll namespace.
func (v *validator) sharedPollNamespace(path string, c *Config, s *SharedPollOptions) {
	switch name := s.ProxyName; {
	case name == "" || name == "default":
		if c.Channel.Proxy.SharedPollRefresh.Endpoint == "" {
			v.fail(path+".proxy_name", "the default proxy has no endpoint (set channel.proxy.shared_poll_refresh.endpoint, or name a proxy from proxies)")
		}
	case !slices.ContainsFunc(c.Proxies, func(p NamedProxy) bool { return p.Name == name }):
		v.fail(path+".proxy_name", "proxy %q is not defined in proxies", name)
	}
	if s.PublishEnabled && s.Mode != "versioned" {
		v.fail(path+".publish_enabled", "needs mode versioned: a published value reaches clients by its version, which versionless channels do not have")
	}
}

// sharedPollChannels refuses, on the shared_poll namespace at path, the
// options the engine refuses there too (their subscribers get values of
// keys, not publications), naming the key.
func (v *validator) sharedPollChannels(path string, o *ChannelOptions) {
	for _, k := range []struct {
		key string
		set bool
	}{
		{"history_size", o.HistorySize != 0}, {"history_ttl", o.HistoryTTL != 0},
		{"force_recovery", o.ForceRecovery}, {"force_positioning", o.ForcePositioning},
	} {
		if k.set {
			v.fail(path+"."+k.key, "shared_poll channels keep no history")
		}
	}
	if o.AllowWildcardSubscriptions {
		v.fail(path+".allow_wildcard_subscriptions", "shared_poll channels have no wildcard subscriptions")
	}
	if o.MapClientsPresenceChannelPrefix != "" || o.MapUsersPresenceChannelPrefix != "" {
		v.fail(path, "map_clients_presence_channel_prefix and map_users_presence_channel_prefix belong to stream namespaces")
	}
}

// sharedPollNotices names the shared_poll options set on namespaces that
// are not shared_poll ones. Centrifugo ignores them there, so a
// configuration it runs is not refused; but they do nothing.
func (c *Config) sharedPollNotices() []string {
	var out []string
	each := func(path string, o *ChannelOptions) {
		if o.IsSharedPoll() {
			// Centrifugo keeps presence and join/leave for shared_poll
			// channels; Gyre's trackers are not in presence.
			for _, k := range []struct {
				key string
				set bool
			}{{"presence", o.Presence}, {"join_leave", o.JoinLeave}, {"force_push_join_leave", o.ForcePushJoinLeave}} {
				if k.set {
					out = append(out, "config: "+path+"."+k.key+" has no effect: shared_poll channels keep no presence nor join/leave in Gyre")
				}
			}
			return
		}
		if o.SharedPoll != (SharedPollOptions{}) {
			typ := o.SubscriptionType
			if typ == "" {
				typ = "stream"
			}
			out = append(out, "config: "+path+".shared_poll is set but has no effect: the namespace's subscription_type is "+typ+", not shared_poll")
		}
	}
	each("channel.without_namespace", &c.Channel.WithoutNamespace)
	for i := range c.Channel.Namespaces {
		each("channel.namespaces["+strconv.Itoa(i)+"]", &c.Channel.Namespaces[i].ChannelOptions)
	}
	return out
}

// staticHeaders checks the fixed headers of a proxy: names that HTTP
// allows, values without line breaks, which would end the header early.
func (v *validator) staticHeaders(path string, h map[string]string) {
	for _, name := range sortedKeys(h) {
		switch {
		case !isToken(name):
			v.fail(path, "invalid header name %q", name)
		case strings.ContainsAny(h[name], "\r\n\x00"):
			v.fail(path, "the value of %s holds a line break or NUL", name)
		}
	}
}

// isToken reports whether s is an HTTP token (RFC 9110 5.6.2), as a
// header name must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
