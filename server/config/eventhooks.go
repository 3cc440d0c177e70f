package config

import "time"

// EventHooks tunes the delivery of channel state events (channel.proxy.state)
// and user status events (client.proxy.user_status): Gyre's own keys.
type EventHooks struct {
	VacatedDelay  time.Duration `key:"vacated_delay" default:"5s" min:"0" help:"How long a channel stays occupied after its last subscriber left; a subscriber within it cancels the vacated event (a page reload sends nothing)."`
	OfflineDelay  time.Duration `key:"offline_delay" default:"10s" min:"0" help:"How long a user stays online after their last connection closed; a connection within it cancels the offline event."`
	HMACSecretKey string        `key:"hmac_secret_key" help:"Signs every HTTP event hook request: X-Gyre-Signature carries an HMAC-SHA256 of the timestamp and body (docs/event-hooks.md); empty signs nothing."`
	BatchMaxSize  int           `key:"batch_max_size" default:"100" min:"1" help:"Most events in one request to the backend."`
	BatchMaxDelay time.Duration `key:"batch_max_delay" default:"20ms" min:"0" help:"How long an event may wait for others to join its request; 0 sends what is there at once."`
	QueueMaxSize  int           `key:"queue_max_size" default:"100000" min:"1" help:"Most events waiting for one proxy; past it new events are dropped, counted and logged."`
	MaxAge        time.Duration `key:"max_age" default:"1h" min:"1s" help:"Events the backend has not taken within this time (it stayed down) are dropped, counted and logged."`
}

// EventHooksOn reports whether any channel state or user status events
// are configured.
func (c *Config) EventHooksOn() bool {
	if c.Client.Proxy.UserStatus.Enabled || c.Client.UserStatusProxyName != "" || c.Channel.WithoutNamespace.StateProxyEnabled {
		return true
	}
	for _, ns := range c.Channel.Namespaces {
		if ns.StateProxyEnabled {
			return true
		}
	}
	return false
}

// PresenceType is where presence is kept, and with it the occupancy the
// event hooks track: presence_manager.type when enabled, else the
// engine's type.
func (c *Config) PresenceType() string {
	if c.PresenceManager.Enabled {
		return c.PresenceManager.Type
	}
	return c.Engine.Type
}

// eventHooks checks that the events are decided once for the cluster:
// they are tracked where presence is, and presence in memory with a
// broker shared by several nodes would have each node send its own.
func (v *validator) eventHooks(c *Config) {
	if !c.EventHooksOn() || c.PresenceType() != "memory" {
		return
	}
	if b := c.Broker; b.Enabled && b.Type != "memory" {
		v.fail("presence_manager.type", "channel state and user status events are tracked where presence is kept; with presence in memory and broker.type %s, each node would send its own: keep presence in Redis (presence_manager.type redis)", b.Type)
	}
}

// hookProxyNotices names the options of the proxies whose calls come
// from no client request (the event hooks, the shared-poll refresh): the
// client headers, metadata and meta they would forward are not there.
func (c *Config) hookProxyNotices() []string {
	var out []string
	for _, p := range []struct {
		path, doc string
		p         *Proxy
	}{
		{"channel.proxy.state", "docs/event-hooks.md", &c.Channel.Proxy.State},
		{"channel.proxy.cache_empty", "docs/event-hooks.md", &c.Channel.Proxy.CacheEmpty},
		{"client.proxy.user_status", "docs/event-hooks.md", &c.Client.Proxy.UserStatus.Proxy},
		{"channel.proxy.shared_poll_refresh", "docs/shared-poll.md", &c.Channel.Proxy.SharedPollRefresh},
	} {
		unused := map[string]bool{
			"http_headers":                   len(p.p.HTTPHeaders) > 0,
			"grpc_metadata":                  len(p.p.GRPCMetadata) > 0,
			"emulated_headers":               len(p.p.EmulatedHeaders) > 0,
			"include_connection_meta":        p.p.IncludeConnectionMeta,
			"http.status_to_code_transforms": len(p.p.HTTP.StatusToCodeTransforms) > 0,
		}
		for _, key := range []string{"http_headers", "grpc_metadata", "emulated_headers", "include_connection_meta", "http.status_to_code_transforms"} {
			if unused[key] {
				out = append(out, "config: "+p.path+"."+key+" is not used: these calls come from no client request ("+p.doc+")")
			}
		}
	}
	return out
}
