package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// backends checks the Redis and NATS settings that are in use.
func (v *validator) backends(c *Config) {
	if c.Engine.Type == "redis" {
		v.redis("engine.redis", &c.Engine.Redis.Redis)
	}
	if c.Broker.Enabled {
		switch c.Broker.Type {
		case "redis":
			v.redis("broker.redis", &c.Broker.Redis.Redis)
		case "nats", "redisnats":
			v.nats(c)
		}
	}
	if c.PresenceManager.Enabled && c.PresenceManager.Type == "redis" {
		v.redis("presence_manager.redis", &c.PresenceManager.Redis.Redis)
	}
}

var redisSchemes = []string{"redis", "rediss", "unix", "tcp"}

func (v *validator) redis(path string, r *Redis) {
	switch {
	case len(r.ClusterAddress) > 0 && len(r.SentinelAddress) > 0:
		v.fail(path+".cluster_address", "cannot be combined with sentinel_address")
	case len(r.SentinelAddress) > 0 && r.SentinelMasterName == "":
		v.fail(path+".sentinel_master_name", "must be set when sentinel_address is set")
	case len(r.ClusterAddress) == 0 && len(r.SentinelAddress) == 0 && len(r.Address) == 0:
		v.fail(path+".address", "must hold at least one address")
	}
	v.redisAddresses(path+".address", r.Address)
	v.redisAddresses(path+".cluster_address", r.ClusterAddress)
	v.redisAddresses(path+".sentinel_address", r.SentinelAddress)
}

func (v *validator) redisAddresses(path string, list []string) {
	for i, addr := range list {
		if err := checkRedisAddress(addr); err != nil {
			v.fail(fmt.Sprintf("%s[%d]", path, i), "%v", err)
		}
	}
}

// checkRedisAddress accepts host:port and URLs such as redis://host:6379/0.
func checkRedisAddress(addr string) error {
	if !strings.Contains(addr, "://") {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("invalid address %q: want host:port or a redis:// URL", addr)
		}
		return nil
	}
	u, err := url.Parse(addr)
	if err != nil {
		return fmt.Errorf("invalid URL %q", addr)
	}
	if !slices.Contains(redisSchemes, u.Scheme) {
		return fmt.Errorf("unsupported scheme %q in %q (allowed: %s)", u.Scheme, addr, strings.Join(redisSchemes, ", "))
	}
	if u.Scheme != "unix" && u.Host == "" {
		return fmt.Errorf("no host in %q", addr)
	}
	return nil
}

// nats checks the NATS broker's settings: a channel that keeps history
// needs somewhere to keep it, and raw mode carries no positions.
func (v *validator) nats(c *Config) {
	n := &c.Broker.Nats
	v.natsURL("broker.nats.url", n.URL)
	redisnats := c.Broker.Type == "redisnats"
	if redisnats {
		v.redis("broker.redis", &c.Broker.Redis.Redis)
		if n.JetStream.Enabled {
			v.fail("broker.nats.jetstream.enabled", "redisnats keeps history in Redis (broker.redis); turn jetstream off or use broker.type nats")
		}
	}
	stored := redisnats || n.JetStream.Enabled
	if n.RawMode.Enabled && stored {
		v.fail("broker.nats.raw_mode.enabled", "raw mode carries bare data, without the offsets history needs: it cannot be combined with %s", map[bool]string{true: "broker.type redisnats", false: "broker.nats.jetstream"}[redisnats])
	}
	for from := range n.RawMode.ChannelReplacements {
		if from == "" {
			v.fail("broker.nats.raw_mode.channel_replacements", "an empty string cannot be replaced")
		}
	}
	if stored {
		return
	}
	// Without a store the broker keeps no streams: a namespace with
	// history would have every publication refused.
	check := func(path string, o *ChannelOptions) {
		if o.HistorySize > 0 && o.HistoryTTL > 0 {
			v.fail(path+".history_size", "broker.type nats keeps no history: set broker.nats.jetstream.enabled, or use broker.type redisnats (history in broker.redis)")
		}
	}
	check("channel.without_namespace", &c.Channel.WithoutNamespace)
	for i := range c.Channel.Namespaces {
		check(fmt.Sprintf("channel.namespaces[%d]", i), &c.Channel.Namespaces[i].ChannelOptions)
	}
}

func (v *validator) natsURL(path, raw string) {
	for addr := range strings.SplitSeq(raw, ",") {
		u, err := url.Parse(strings.TrimSpace(addr))
		if err != nil || u.Host == "" {
			v.fail(path, "invalid NATS URL %q", addr)
		}
	}
}

// endpoints checks TLS and the admin interface.
func (v *validator) endpoints(c *Config) {
	v.serverTLS("http_server.tls", &c.HTTPServer.TLS)
	v.serverTLS("http_server.internal_tls", &c.HTTPServer.InternalTLS)
	if c.UniGRPC.Enabled {
		v.serverTLS("uni_grpc.tls", &c.UniGRPC.TLS)
	}
	v.grpcAPI(c)
	a := &c.Admin
	if a.Enabled && !a.Insecure {
		if a.Password == "" {
			v.fail("admin.password", "must be set when admin.enabled is true and admin.insecure is false")
		}
		if a.Secret == "" {
			v.fail("admin.secret", "must be set when admin.enabled is true and admin.insecure is false")
		}
	}
	if a.Enabled && a.WebProxyAddress != "" {
		if u, err := url.Parse(a.WebProxyAddress); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.fail("admin.web_proxy_address", "must be an http:// or https:// URL")
		}
		if a.WebPath != "" {
			v.fail("admin.web_path", "cannot be set together with admin.web_proxy_address")
		}
	}
	if _, err := a.TrustedProxyPrefixes(); err != nil {
		v.fail("admin.trusted_proxies", "%v", err)
	}
	if a.Enabled && a.WebPath != "" {
		if st, err := os.Stat(filepath.Join(a.WebPath, "index.html")); err != nil || st.IsDir() {
			v.fail("admin.web_path", "must be a directory holding index.html")
		}
	}
}

// serverTLS checks that an enabled server TLS has a certificate and a key.
func (v *validator) serverTLS(path string, t *TLS) {
	if !t.Enabled {
		return
	}
	if t.CertPEM == "" && t.CertPEMB64 == "" && t.CertPEMFile == "" {
		v.fail(path+".cert_pem", "a certificate (cert_pem, cert_pem_b64 or cert_pem_file) is required when TLS is enabled")
	}
	if t.KeyPEM == "" && t.KeyPEMB64 == "" && t.KeyPEMFile == "" {
		v.fail(path+".key_pem", "a private key (key_pem, key_pem_b64 or key_pem_file) is required when TLS is enabled")
	}
}

// grpcAPI checks the gRPC API's TLS and that its port is not one the HTTP
// server listens on.
func (v *validator) grpcAPI(c *Config) {
	g := &c.GRPCAPI
	if !g.Enabled {
		return
	}
	v.serverTLS("grpc_api.tls", &g.TLS)
	if g.Port == 0 {
		return
	}
	hs := &c.HTTPServer
	if g.Port == hs.Port || g.Port == hs.InternalPort {
		v.fail("grpc_api.port", "%d is a port of the HTTP server; the gRPC API needs its own", g.Port)
	}
	if c.UniGRPC.Enabled && g.Port == c.UniGRPC.Port {
		v.fail("grpc_api.port", "%d is the port of uni_grpc; the gRPC API needs its own", g.Port)
	}
}
