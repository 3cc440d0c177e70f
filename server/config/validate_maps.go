package config

import (
	"slices"
	"strings"
	"time"
)

// Map channels: what a namespace's map options and the map broker must
// satisfy. The rules are Centrifugo's, plus those the engine would refuse
// at start (meta_ttl in persistent mode, page sizes), so that checkconfig
// names the key.

// IsMap reports whether the channels of o are maps (subscription_type
// map, map_clients or map_users).
func (o *ChannelOptions) IsMap() bool {
	t := o.SubscriptionType
	return t == "map" || t == "map_clients" || t == "map_users"
}

// Defaults the engine fills in, which the lifetime rules compare with.
const (
	mapDefaultStreamTTL = time.Minute
	mapDefaultPageSize  = 100
	mapDefaultMaxPage   = 1000
)

// mapOptions checks the map options of the namespace at path.
func (v *validator) mapOptions(path string, o *ChannelOptions) {
	m := &o.Map
	switch {
	case !o.IsMap():
		// The other map options mean nothing to a stream namespace, and
		// configurations dumped with every key carry them everywhere;
		// this one would make its users expect what streams do not do.
		if m.RemoveClientOnUnsubscribe {
			v.fail(path+".map.remove_client_on_unsubscribe", "needs subscription_type map, map_clients or map_users")
		}
		return
	}
	if o.AllowWildcardSubscriptions {
		v.fail(path+".allow_wildcard_subscriptions", "map channels have no wildcard subscriptions")
	}
	if o.SubscribeStreamProxyEnabled {
		v.fail(path+".subscribe_stream_proxy_enabled", "map channels keep their state in the map broker: they cannot be streamed from the backend")
	}
	if o.MapClientsPresenceChannelPrefix != "" || o.MapUsersPresenceChannelPrefix != "" {
		v.fail(path, "map_clients_presence_channel_prefix and map_users_presence_channel_prefix belong to stream namespaces")
	}
	v.mapMode(path+".map", o.SubscriptionType, m)
	v.mapPages(path+".map", m)
	if m.ClientKey != "" && m.PublishProxyEnabled {
		v.fail(path+".map.client_key", "cannot be used with map.publish_proxy_enabled: the proxy decides the key")
	}
	if m.ClientKey != "" && m.RemoveProxyEnabled {
		v.fail(path+".map.client_key", "cannot be used with map.remove_proxy_enabled: the proxy decides the key")
	}
}

// mapMode checks the mode and the lifetimes that go with it.
func (v *validator) mapMode(path, typ string, m *MapOptions) {
	expiring := m.Mode == "ephemeral" || m.Mode == "recoverable"
	switch {
	case m.Mode == "" && typ == "map":
		v.fail(path+".mode", "is required when subscription_type is map (ephemeral, recoverable or persistent)")
	case m.Mode == "persistent" && typ != "map":
		v.fail(path+".mode", "persistent is not allowed with subscription_type %s: its keys must expire (ephemeral or recoverable)", typ)
	case expiring && m.KeyTTL == 0 && typ == "map":
		v.fail(path+".key_ttl", "is required when map.mode is %s", m.Mode)
	case m.Mode == "persistent" && m.KeyTTL != 0:
		v.fail(path+".key_ttl", "must be 0 when map.mode is persistent: its keys do not expire")
	}
	if m.Mode == "ephemeral" || (m.Mode == "" && typ != "map") {
		for _, k := range []struct {
			key string
			set bool
		}{{"stream_size", m.StreamSize != 0}, {"stream_ttl", m.StreamTTL != 0}, {"meta_ttl", m.MetaTTL != 0}} {
			if k.set {
				v.fail(path+"."+k.key, "must be 0 when map.mode is ephemeral: it keeps no stream")
			}
		}
		return
	}
	if m.MetaTTL == 0 {
		return
	}
	streamTTL := m.StreamTTL
	if streamTTL == 0 {
		streamTTL = mapDefaultStreamTTL
	}
	switch {
	case m.Mode == "persistent":
		v.fail(path+".meta_ttl", "must be 0 when map.mode is persistent: its keys never expire, nor may the epoch that names them")
	case m.MetaTTL < streamTTL:
		v.fail(path+".meta_ttl", "%s is shorter than map.stream_ttl (%s)", m.MetaTTL, streamTTL)
	case m.MetaTTL < m.KeyTTL:
		v.fail(path+".meta_ttl", "%s is shorter than map.key_ttl (%s)", m.MetaTTL, m.KeyTTL)
	}
}

// mapPages checks that the page sizes, with the defaults of the ones left
// at 0, keep min ≤ default ≤ max.
func (v *validator) mapPages(path string, m *MapOptions) {
	maxPage := m.MaxPageSize
	if maxPage == 0 {
		maxPage = max(mapDefaultMaxPage, m.MinPageSize)
	}
	minPage := m.MinPageSize
	if minPage == 0 {
		minPage = min(mapDefaultPageSize, maxPage)
	}
	def := m.DefaultPageSize
	if def == 0 {
		def = min(max(mapDefaultPageSize, minPage), maxPage)
	}
	switch {
	case minPage > maxPage:
		v.fail(path+".min_page_size", "%d is greater than map.max_page_size (%d)", minPage, maxPage)
	case def < minPage || def > maxPage:
		v.fail(path+".default_page_size", "%d is not within map.min_page_size (%d) and map.max_page_size (%d)", def, minPage, maxPage)
	}
}

// mapPresencePrefixes checks that the map presence prefixes of the stream
// namespace at path name namespaces of the matching map type.
func (v *validator) mapPresencePrefixes(path string, o *ChannelOptions, ch *Channel) {
	for _, p := range []struct {
		key, prefix, want string
	}{
		{"map_clients_presence_channel_prefix", o.MapClientsPresenceChannelPrefix, "map_clients"},
		{"map_users_presence_channel_prefix", o.MapUsersPresenceChannelPrefix, "map_users"},
	} {
		if p.prefix == "" {
			continue
		}
		target, ok := namespaceOfPrefix(ch, p.prefix)
		switch {
		case !ok:
			v.fail(path+"."+p.key, "%q names no namespace of channel.namespaces (want one of subscription_type %s)", p.prefix, p.want)
		case target.SubscriptionType != p.want:
			v.fail(path+"."+p.key, "%q names a namespace of subscription_type %q, want %s", p.prefix, target.SubscriptionType, p.want)
		}
	}
}

// namespaceOfPrefix is the options of the namespace of the channels whose
// names start with prefix: the one named before its first namespace
// boundary, or the options of channels without a namespace when it has
// none.
func namespaceOfPrefix(ch *Channel, prefix string) (*ChannelOptions, bool) {
	name, _, ok := strings.Cut(prefix, ch.NamespaceBoundary)
	if !ok {
		return &ch.WithoutNamespace, true
	}
	i := slices.IndexFunc(ch.Namespaces, func(ns Namespace) bool { return ns.Name == name })
	if i < 0 {
		return nil, false
	}
	return &ch.Namespaces[i].ChannelOptions, true
}

// mapBroker checks the map broker: postgres is refused, a redis one of its
// own needs a usable Redis.
func (v *validator) mapBroker(c *Config) {
	switch c.MapBrokerType() {
	case "postgres":
		v.fail("map_broker.type", "postgres is not supported by Gyre: use memory (one node) or redis")
	case "redis":
		if !c.MapBrokerSharesEngineRedis() {
			v.redis("map_broker.redis", &c.MapBroker.Redis.Redis)
		}
	}
}

// MapBrokerSharesEngineRedis reports whether the redis map broker uses the
// engine's Redis: map_broker.type and engine.type are redis, and
// map_broker.redis names no Redis of its own (address, cluster_address
// and sentinel_address as they are by default).
func (c *Config) MapBrokerSharesEngineRedis() bool {
	if c.MapBrokerType() != "redis" || c.Engine.Type != "redis" {
		return false
	}
	own, def := &c.MapBroker.Redis.Redis, Default().MapBroker.Redis.Redis
	return slices.Equal(own.Address, def.Address) && len(own.ClusterAddress) == 0 && len(own.SentinelAddress) == 0
}

// MapBrokerType is the map broker that runs: map_broker.type, or, when it
// is empty, the engine's kind (redis for a redis engine, else memory).
// Nodes that share an engine then share their map channels too, rather
// than each keeping its own.
func (c *Config) MapBrokerType() string {
	if t := c.MapBroker.Type; t != "" {
		return t
	}
	if c.Engine.Type == "redis" {
		return "redis"
	}
	return "memory"
}
