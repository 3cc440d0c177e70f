package server

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/gyrehq/gyre/server/config"
)

// restartOnly lists what a reload from running to next changes that only
// a restart applies: every key except the channel options and the token
// settings, which Reload hands to the node. Namespaces' choices of proxy
// are channel options too, but the proxies are wired at start, so a
// change to them is named as well.
func restartOnly(running, next *config.Config) []string {
	var out []string
	for _, key := range config.Changed(running, next) {
		if !appliedOnReload(key) {
			out = append(out, key)
		}
	}
	if !reflect.DeepEqual(proxyRoutes(running), proxyRoutes(next)) {
		out = append(out, "channel namespaces' proxy options (*_proxy_enabled, *_proxy_name, subscribe_stream_proxy_bidirectional, map.publish_proxy_*, map.remove_proxy_*, shared_poll.proxy_name)")
	}
	return out
}

func appliedOnReload(key string) bool {
	switch {
	case strings.HasPrefix(key, "client.token."), strings.HasPrefix(key, "client.subscription_token."),
		key == "client.insecure_skip_token_signature_verify":
		// The token settings Reload hands to the node (tokenConfig).
		return true
	case strings.HasPrefix(key, "channel.proxy."):
		return false
	case key == "channel.namespace_boundary", key == "channel.private_prefix":
		// The NATS broker names subjects after them from its start.
		return false
	default:
		// The namespaces' proxy options are compared as proxyRoutes.
		return strings.HasPrefix(key, "channel.")
	}
}

// proxyRoutes is which proxy each namespace uses for what ("" is channels
// without a namespace): the namespace options that setupProxies reads.
func proxyRoutes(c *config.Config) map[string]string {
	routes := map[string]string{}
	add := func(ns string, o *config.ChannelOptions) {
		if o.IsSharedPoll() {
			routes[ns+" shared_poll_refresh"] = "route " + sharedPollRoute(o.SharedPoll)
		}
		for _, r := range []struct {
			what, name string
			on         bool
		}{
			{"subscribe", o.SubscribeProxyName, o.SubscribeProxyEnabled},
			{"publish", o.PublishProxyName, o.PublishProxyEnabled},
			{"sub_refresh", o.SubRefreshProxyName, o.SubRefreshProxyEnabled},
			{"subscribe_stream", o.SubscribeStreamProxyName + " bidirectional=" + strconv.FormatBool(o.SubscribeStreamProxyBidirectional), o.SubscribeStreamProxyEnabled},
			{"map_publish", o.Map.PublishProxyName, o.Map.PublishProxyEnabled},
			{"map_remove", o.Map.RemoveProxyName, o.Map.RemoveProxyEnabled},
			{"state", o.StateProxyName, o.StateProxyEnabled},
			{"cache_empty", o.CacheEmptyProxyName, o.CacheEmptyProxyEnabled},
		} {
			if r.on {
				routes[ns+" "+r.what] = r.name
			}
		}
	}
	add("", &c.Channel.WithoutNamespace)
	for i := range c.Channel.Namespaces {
		add(c.Channel.Namespaces[i].Name, &c.Channel.Namespaces[i].ChannelOptions)
	}
	return routes
}
