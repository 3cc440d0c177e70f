package server

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/gyrehq/gyre/server/config"
)

// The start-up log says what runs where, so that an operator reading it
// knows which engine the node uses and what each port serves without
// reading the config back: a line per engine part, then a "listening"
// line per listener naming the config key of its port, whether it speaks
// TLS and what it serves.

// route serves h for pattern on mux and notes it, as what, for the
// listening line of mux.
func (s *Server) route(mux *http.ServeMux, what, pattern string, h http.Handler) {
	mux.Handle(pattern, h)
	s.note(mux, what+" "+pattern)
}

// note adds what to the endpoints the listening line of mux names.
func (s *Server) note(mux *http.ServeMux, what string) {
	if s.serves == nil {
		s.serves = map[*http.ServeMux][]string{}
	}
	s.serves[mux] = append(s.serves[mux], what)
}

// apiAccess says who may call the HTTP API: the three cases an operator
// must tell apart, since an API without key and not insecure refuses
// every call.
func apiAccess(a config.HTTPAPI) string {
	switch {
	case a.Insecure:
		return "no key checked: http_api.insecure"
	case a.Key != "":
		return "X-API-Key required"
	default:
		return "no http_api.key set: refuses every call"
	}
}

// logListening writes the line of one listener: the config key of its
// port, its address, TLS, and what it serves.
func (s *Server) logListening(portKey, addr string, tls bool, serves []string, attrs ...any) {
	if serves == nil {
		serves = []string{} // logged as [], not null
	}
	s.log.Info("listening", append([]any{"listener", portKey, "address", addr, "tls", tls, "serves", serves}, attrs...)...)
}

// logEngine writes which engine the node runs on and, when broker or
// presence_manager replace a part of it, which; for Redis, how it is
// reached (single, sharded, sentinel or cluster) and where, without
// credentials.
func logEngine(c *config.Config, log *slog.Logger) {
	log.Info("engine", backendAttrs(c.Engine.Type, c.Engine.Redis.Redis)...)
	if b := c.Broker; b.Enabled {
		switch b.Type {
		case "nats", "redisnats":
			log.Info("broker", natsAttrs(c)...)
			if presenceInProcess(c) {
				log.Warn("presence is kept by each node for its own clients: presence, and presence_stats differ between nodes; set engine.type redis or presence_manager for presence across nodes")
			}
		default:
			log.Info("broker", backendAttrs(b.Type, b.Redis.Redis)...)
		}
	}
	if p := c.PresenceManager; p.Enabled {
		log.Info("presence manager", backendAttrs(p.Type, p.Redis.Redis)...)
	}
	logMapBroker(c, log)
}

// logMapBroker writes where map channels are kept, when the config has
// map namespaces or a map broker other than the default; and warns when
// nodes sharing a Redis engine keep them each in memory.
func logMapBroker(c *config.Config, log *slog.Logger) {
	maps := mapNamespaces(c)
	mb, kind := c.MapBroker, c.MapBrokerType()
	if len(maps) == 0 && mb.Type == "" {
		return
	}
	attrs := append(backendAttrs(kind, mb.Redis.Redis), "namespaces", maps)
	if c.MapBrokerSharesEngineRedis() {
		attrs = append(backendAttrs(kind, c.Engine.Redis.Redis), "namespaces", maps, "redis", "engine.redis")
	}
	log.Info("map broker", attrs...)
	if len(maps) > 0 && kind == "memory" && c.Engine.Type == "redis" {
		log.Warn("map channels are kept by each node in its memory while the engine is shared: nodes do not see each other's map channels; set map_broker.type redis")
	}
}

// mapNamespaces lists the namespaces of map channels ("" for channels
// without a namespace).
func mapNamespaces(c *config.Config) []string {
	out := []string{} // logged as [], not null
	if c.Channel.WithoutNamespace.IsMap() {
		out = append(out, "")
	}
	for i := range c.Channel.Namespaces {
		if ns := &c.Channel.Namespaces[i]; ns.IsMap() {
			out = append(out, ns.Name)
		}
	}
	return out
}

// presenceInProcess reports whether presence stays in the node's memory.
func presenceInProcess(c *config.Config) bool {
	if p := c.PresenceManager; p.Enabled {
		return p.Type == "memory"
	}
	return c.Engine.Type == "memory"
}

// natsAttrs describe a nats or redisnats broker: where NATS is, and where
// history is kept.
func natsAttrs(c *config.Config) []any {
	n := c.Broker.Nats
	history := "none"
	switch {
	case c.Broker.Type == "redisnats":
		history = "redis"
	case n.JetStream.Enabled:
		history = "jetstream"
	}
	attrs := []any{"type", c.Broker.Type, "nats_url", strings.Join(withoutCredentials(strings.Split(n.URL, ",")), ","), "history", history, "raw_mode", n.RawMode.Enabled}
	if c.Broker.Type == "redisnats" {
		mode, addrs := redisShape(c.Broker.Redis.Redis)
		attrs = append(attrs, "redis_mode", mode, "redis_addresses", addrs)
	}
	return attrs
}

func backendAttrs(typ string, r config.Redis) []any {
	if typ != "redis" {
		return []any{"type", typ}
	}
	mode, addrs := redisShape(r)
	attrs := []any{"type", typ, "redis_mode", mode, "redis_addresses", addrs}
	if mode == "sentinel" {
		attrs = append(attrs, "sentinel_master_name", r.SentinelMasterName)
	}
	return attrs
}

// redisShape is how the engine reaches Redis, in the precedence the Redis
// engine applies (sentinels, then a cluster, then addresses, several of
// which shard channels), and the addresses it uses.
func redisShape(r config.Redis) (mode string, addrs []string) {
	switch {
	case len(r.SentinelAddress) > 0:
		return "sentinel", withoutCredentials(r.SentinelAddress)
	case len(r.ClusterAddress) > 0:
		return "cluster", withoutCredentials(r.ClusterAddress)
	case len(r.Address) > 1:
		return "sharded", withoutCredentials(r.Address)
	}
	return "single", withoutCredentials(r.Address)
}

// withoutCredentials drops what precedes the last '@' of each address
// after its scheme (redis://user:password@host:6379/0 gives
// redis://host:6379/0), so that no password reaches the log, even one with
// characters a URL parser would split on.
func withoutCredentials(addrs []string) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		scheme, rest, ok := strings.Cut(a, "://")
		if !ok {
			scheme, rest = "", a
		}
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			rest = rest[at+1:]
		}
		if ok {
			rest = scheme + "://" + rest
		}
		out[i] = rest
	}
	return out
}
