package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/proxy"
)

// proxies holds the proxies to the application backend that the
// configuration enables, and registers them as the node's handlers.
type proxies struct {
	cfg  *config.Config
	s    *Server
	pool *proxy.Pool
	// tlsConfigs shares one *tls.Config per TLS section, so that gRPC
	// proxies with the same endpoint and TLS share a connection.
	tlsConfigs map[config.TLS]*tls.Config
	built      map[string]*proxy.Proxy // by name, or by key of a default
	// headers are the client request headers any proxy forwards;
	// emulated the headers of connect commands any proxy forwards (lower
	// case), kept with the connection for the proxies called after connect.
	headers, emulated []string
	// connect is the connect proxy, nil without one.
	connect *proxy.Proxy

	// Per namespace ("" is channels without a namespace); absent: the
	// namespace's own rules apply.
	subscribe, publish, subRefresh map[string]*proxy.Proxy
	mapPublish, mapRemove          map[string]*proxy.Proxy
	cacheEmpty                     map[string]*proxy.Proxy
	streams                        map[string]streamProxy
	rpc                            map[string]*proxy.Proxy
	rpcNamespaces                  map[string]bool
}

// setupProxies builds the configured proxies and registers them on the
// node; it must run before the node runs.
func (s *Server) setupProxies() error {
	c := s.cfg
	p := &proxies{
		cfg: c, s: s, pool: proxy.NewPool(),
		tlsConfigs: map[config.TLS]*tls.Config{}, built: map[string]*proxy.Proxy{},
		subscribe: map[string]*proxy.Proxy{}, publish: map[string]*proxy.Proxy{}, subRefresh: map[string]*proxy.Proxy{},
		mapPublish: map[string]*proxy.Proxy{}, mapRemove: map[string]*proxy.Proxy{},
		cacheEmpty: map[string]*proxy.Proxy{},
		streams:    map[string]streamProxy{},
		rpc:        map[string]*proxy.Proxy{}, rpcNamespaces: map[string]bool{},
	}
	s.proxyPool = p.pool
	if err := p.client(); err != nil {
		return err
	}
	if err := p.channels(); err != nil {
		return err
	}
	if err := p.sharedPoll(); err != nil {
		return err
	}
	if err := p.rpcs(); err != nil {
		return err
	}
	eh, err := p.eventHooks()
	if err != nil {
		return err
	}
	if eh != nil {
		s.hooks = eh
		s.node.OnOccupancy(eh.HandleOccupancy)
	}
	p.connecting()
	s.proxyHeaders = p.headers
	return nil
}

// connecting registers the connect proxy and keeps the emulated headers
// that later proxies forward with the connection; it runs once every
// proxy is built, so that it knows them all.
func (p *proxies) connecting() {
	if p.connect == nil && len(p.emulated) == 0 {
		return
	}
	connect, names := p.connect, p.emulated
	p.s.node.OnConnecting(func(ctx context.Context, e gyre.ConnectingEvent) (gyre.ConnectingReply, error) {
		ctx = proxy.KeepEmulated(ctx, e.Headers, names)
		// A connection with a token is the token's to decide, as in
		// Centrifugo; one authenticated by the user header
		// (client.user_id_http_header) is the proxy in front's.
		if connect == nil || e.Token != "" || e.Credentials != nil {
			return gyre.ConnectingReply{Context: ctx}, nil
		}
		rep, err := connect.Connect(ctx, e)
		rep.Context = ctx
		return rep, err
	})
}

// streamProxy is a namespace's subscription streams.
type streamProxy struct {
	proxy         *proxy.Proxy
	bidirectional bool
}

// named returns the proxy of the proxies list called name.
func (p *proxies) named(name string) (*proxy.Proxy, error) {
	for _, np := range p.cfg.Proxies {
		if np.Name == name {
			return p.build(name, name, np.Proxy)
		}
	}
	return nil, fmt.Errorf("server: proxy %q is not defined in proxies", name)
}

// pick returns the proxy a namespace names: "default" is def (under key),
// anything else one of the proxies list.
func (p *proxies) pick(name, key string, def config.Proxy) (*proxy.Proxy, error) {
	if name == "" || name == "default" {
		return p.build(key, "default", def)
	}
	return p.named(name)
}

// build makes (once per key) the proxy cfg describes; name is the proxy's
// name in metrics: its name in the proxies list, or "default".
func (p *proxies) build(key, name string, cfg config.Proxy) (*proxy.Proxy, error) {
	if pr := p.built[key]; pr != nil {
		return pr, nil
	}
	pc := proxy.Config{
		Name: key, Endpoint: cfg.Endpoint, Timeout: cfg.Timeout,
		HTTPHeaders: cfg.HTTPHeaders, GRPCMetadata: cfg.GRPCMetadata, EmulatedHeaders: cfg.EmulatedHeaders,
		BinaryEncoding: cfg.BinaryEncoding, IncludeConnectionMeta: cfg.IncludeConnectionMeta,
		StaticHeaders:      cfg.HTTP.StaticHeaders,
		GRPCCredentialsKey: cfg.GRPC.CredentialsKey, GRPCCredentialsValue: cfg.GRPC.CredentialsValue,
		GRPCCompression: cfg.GRPC.Compression, Logger: p.s.log,
		TracerProvider: p.s.tel.ProxyTracerProvider(),
		Calls:          p.s.metrics.ProxyCalls(proxyProtocol(cfg.Endpoint), name),
	}
	for _, t := range cfg.HTTP.StatusToCodeTransforms {
		st := proxy.StatusTransform{StatusCode: t.StatusCode}
		if t.ToDisconnect.Code != 0 {
			st.Disconnect = &gyre.Disconnect{Code: uint32(t.ToDisconnect.Code), Reason: t.ToDisconnect.Reason}
		} else {
			st.Error = &gyre.Error{Code: uint32(t.ToError.Code), Message: t.ToError.Message, Temporary: t.ToError.Temporary}
		}
		pc.StatusTransforms = append(pc.StatusTransforms, st)
	}
	tlsCfg := cfg.HTTP.TLS
	if proxyProtocol(cfg.Endpoint) == "grpc" {
		tlsCfg = cfg.GRPC.TLS
	}
	if tlsCfg.Enabled {
		tc, ok := p.tlsConfigs[tlsCfg]
		if !ok {
			var err error
			if tc, err = clientTLS(tlsCfg); err != nil {
				return nil, fmt.Errorf("server: proxy %s: %w", key, err)
			}
			p.tlsConfigs[tlsCfg] = tc
		}
		pc.TLS = tc
	}
	pr, err := proxy.New(pc, p.pool)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	p.built[key] = pr
	for _, h := range cfg.HTTPHeaders {
		if !slices.Contains(p.headers, h) {
			p.headers = append(p.headers, h)
		}
	}
	for _, h := range cfg.EmulatedHeaders {
		if h = strings.ToLower(h); !slices.Contains(p.emulated, h) {
			p.emulated = append(p.emulated, h)
		}
	}
	return pr, nil
}

// proxyProtocol is how a proxy reaches its endpoint: "grpc" or "http".
func proxyProtocol(endpoint string) string {
	if strings.HasPrefix(endpoint, "grpc://") {
		return "grpc"
	}
	return "http"
}

// client registers the connect and refresh proxies.
func (p *proxies) client() error {
	c := p.cfg.Client
	var connect, refresh *proxy.Proxy
	var err error
	switch {
	case c.ConnectProxyName != "":
		connect, err = p.named(c.ConnectProxyName)
	case c.Proxy.Connect.Enabled:
		connect, err = p.build("client.proxy.connect", "default", c.Proxy.Connect.Proxy)
	}
	if err != nil {
		return err
	}
	switch {
	case c.RefreshProxyName != "":
		refresh, err = p.named(c.RefreshProxyName)
	case c.Proxy.Refresh.Enabled:
		refresh, err = p.build("client.proxy.refresh", "default", c.Proxy.Refresh.Proxy)
	}
	if err != nil {
		return err
	}
	p.connect = connect
	if refresh != nil {
		p.s.node.OnServerSideRefresh(refresh.Refresh)
	}
	return nil
}

// channels registers the subscribe, publish, sub_refresh, subscription
// stream, map publish and map remove proxies of the namespaces that enable
// them.
func (p *proxies) channels() error {
	ch := p.cfg.Channel
	each := func(ns string, o *config.ChannelOptions) error {
		type use struct {
			on     bool
			name   string
			key    string
			def    config.Proxy
			byName map[string]*proxy.Proxy
		}
		for _, u := range []use{
			{o.SubscribeProxyEnabled, o.SubscribeProxyName, "channel.proxy.subscribe", ch.Proxy.Subscribe, p.subscribe},
			{o.PublishProxyEnabled, o.PublishProxyName, "channel.proxy.publish", ch.Proxy.Publish, p.publish},
			{o.SubRefreshProxyEnabled, o.SubRefreshProxyName, "channel.proxy.sub_refresh", ch.Proxy.SubRefresh, p.subRefresh},
			{o.Map.PublishProxyEnabled, o.Map.PublishProxyName, "channel.proxy.map_publish", ch.Proxy.MapPublish, p.mapPublish},
			{o.Map.RemoveProxyEnabled, o.Map.RemoveProxyName, "channel.proxy.map_remove", ch.Proxy.MapRemove, p.mapRemove},
			{o.CacheEmptyProxyEnabled, o.CacheEmptyProxyName, "channel.proxy.cache_empty", ch.Proxy.CacheEmpty, p.cacheEmpty},
		} {
			if !u.on {
				continue
			}
			pr, err := p.pick(u.name, u.key, u.def)
			if err != nil {
				return err
			}
			u.byName[ns] = pr
		}
		if o.SubscribeStreamProxyEnabled {
			pr, err := p.pick(o.SubscribeStreamProxyName, "channel.proxy.subscribe_stream", ch.Proxy.SubscribeStream)
			if err != nil {
				return err
			}
			p.streams[ns] = streamProxy{proxy: pr, bidirectional: o.SubscribeStreamProxyBidirectional}
		}
		return nil
	}
	if err := each("", &ch.WithoutNamespace); err != nil {
		return err
	}
	for i := range ch.Namespaces {
		if err := each(ch.Namespaces[i].Name, &ch.Namespaces[i].ChannelOptions); err != nil {
			return err
		}
	}
	n := p.s.node
	if len(p.subscribe) > 0 || len(p.streams) > 0 {
		n.OnSubscribe(p.onSubscribe)
	}
	if len(p.publish) > 0 || len(p.streams) > 0 {
		n.OnPublish(func(ctx context.Context, c *gyre.Client, e gyre.PublishEvent) (gyre.PublishReply, error) {
			ns := p.namespace(e.Channel)
			if _, ok := p.streams[ns]; ok {
				// The engine hands a stream subscriber's publications to
				// its stream; a client without one has nowhere to
				// publish them.
				return gyre.PublishReply{}, gyre.ErrorNotAvailable
			}
			pr := p.publish[ns]
			if pr == nil {
				return gyre.PublishReply{}, gyre.ErrNotHandled
			}
			return pr.Publish(ctx, c, e)
		})
	}
	p.maps()
	if len(p.cacheEmpty) > 0 {
		n.OnCacheEmpty(func(ctx context.Context, channel string) (bool, error) {
			pr := p.cacheEmpty[p.namespace(channel)]
			if pr == nil {
				return false, nil
			}
			return pr.CacheEmpty(ctx, channel)
		})
	}
	if len(p.subRefresh) > 0 {
		n.OnSubRefresh(func(ctx context.Context, c *gyre.Client, e gyre.SubRefreshEvent) (gyre.SubRefreshReply, error) {
			pr := p.subRefresh[p.namespace(e.Channel)]
			if pr == nil {
				// The subscription asked for server-side refresh when
				// its namespace had a proxy; it has none now: let it
				// live on as it is.
				return gyre.SubRefreshReply{}, nil
			}
			return pr.SubRefresh(ctx, c, e)
		})
	}
	return nil
}

// maps registers the map publish and map remove proxies: a client's
// write or removal in a namespace with one goes to its backend; in the
// others the namespace's map.allow_* keys decide.
func (p *proxies) maps() {
	n := p.s.node
	if len(p.mapPublish) > 0 {
		n.OnMapPublish(func(ctx context.Context, c *gyre.Client, e gyre.MapPublishEvent) (gyre.MapPublishReply, error) {
			pr := p.mapPublish[p.namespace(e.Channel)]
			if pr == nil {
				return gyre.MapPublishReply{}, gyre.ErrNotHandled
			}
			return pr.MapPublish(ctx, c, e)
		})
	}
	if len(p.mapRemove) > 0 {
		n.OnMapRemove(func(ctx context.Context, c *gyre.Client, e gyre.MapRemoveEvent) (gyre.MapRemoveReply, error) {
			pr := p.mapRemove[p.namespace(e.Channel)]
			if pr == nil {
				return gyre.MapRemoveReply{}, gyre.ErrNotHandled
			}
			return pr.MapRemove(ctx, c, e)
		})
	}
}

// onSubscribe sends a subscribe command to its namespace's proxy, or
// opens its subscription stream. As in Centrifugo, subscriptions with a
// token, to user-limited channels and to private channels (which need a
// token) are left to the token and the channel rules.
func (p *proxies) onSubscribe(ctx context.Context, c *gyre.Client, e gyre.SubscribeEvent) (gyre.SubscribeReply, error) {
	ch := p.cfg.Channel
	if e.Token != "" || strings.Contains(e.Channel, ch.UserBoundary) ||
		(ch.PrivatePrefix != "" && strings.HasPrefix(e.Channel, ch.PrivatePrefix)) {
		return gyre.SubscribeReply{}, gyre.ErrNotHandled
	}
	ns := p.namespace(e.Channel)
	if st, ok := p.streams[ns]; ok {
		return st.proxy.SubscribeStream(ctx, c, e, st.bidirectional)
	}
	pr := p.subscribe[ns]
	if pr == nil {
		return gyre.SubscribeReply{}, gyre.ErrNotHandled
	}
	rep, err := pr.Subscribe(ctx, c, e)
	if err != nil {
		return rep, err
	}
	rep.ServerSideRefresh = p.subRefresh[ns] != nil
	return rep, nil
}

// namespace is the namespace of a channel, "" when it has none.
func (p *proxies) namespace(channel string) string { return channelNamespace(p.cfg, channel) }

// channelNamespace is the name of channel's namespace in c, "" for none.
func channelNamespace(c *config.Config, channel string) string {
	ch := c.Channel
	name := strings.TrimPrefix(channel, ch.PrivatePrefix)
	if ns, _, ok := strings.Cut(name, ch.NamespaceBoundary); ok {
		return ns
	}
	return ""
}

// rpcs registers the RPC proxies of the RPC namespaces that enable them,
// and the ping method.
func (p *proxies) rpcs() error {
	r := p.cfg.RPC
	if r.WithoutNamespace.ProxyEnabled {
		pr, err := p.pick(r.WithoutNamespace.ProxyName, "rpc.proxy", r.Proxy)
		if err != nil {
			return err
		}
		p.rpc[""] = pr
	}
	for _, ns := range r.Namespaces {
		p.rpcNamespaces[ns.Name] = true
		if !ns.ProxyEnabled {
			continue
		}
		pr, err := p.pick(ns.ProxyName, "rpc.proxy", r.Proxy)
		if err != nil {
			return err
		}
		p.rpc[ns.Name] = pr
	}
	if len(p.rpc) == 0 && !r.Ping.Enabled {
		return nil
	}
	p.s.node.OnRPC(func(ctx context.Context, c *gyre.Client, e gyre.RPCEvent) (gyre.RPCReply, error) {
		if r.Ping.Enabled && e.Method == r.Ping.Method {
			return gyre.RPCReply{}, nil
		}
		ns := ""
		if before, _, ok := strings.Cut(e.Method, r.NamespaceBoundary); ok && p.rpcNamespaces[before] {
			ns = before
		}
		pr := p.rpc[ns]
		if pr == nil {
			return gyre.RPCReply{}, gyre.ErrNotHandled
		}
		return pr.RPC(ctx, c, e)
	})
	return nil
}
