package config

import (
	"net/url"
	"strconv"
	"strings"
)

// proxies checks the proxies and every reference to one: a namespace that
// enables a proxy must name one that is defined with an endpoint.
func (v *validator) proxies(c *Config) {
	named := map[string]bool{}
	for i, p := range c.Proxies {
		path := "proxies[" + strconv.Itoa(i) + "]"
		switch {
		case !namespaceName.MatchString(p.Name):
			v.fail(path+".name", "invalid proxy name %q: must match %s", p.Name, namespaceName)
		case named[p.Name]:
			v.fail(path+".name", "proxy %q is defined twice", p.Name)
		}
		named[p.Name] = true
		v.proxy(path, &p.Proxy, true)
	}
	cp := &c.Client.Proxy
	if c.Client.ConnectProxyName != "" {
		v.proxyRef("client.connect_proxy_name", c.Client.ConnectProxyName, named, nil)
	} else if cp.Connect.Enabled {
		v.proxy("client.proxy.connect", &cp.Connect.Proxy, true)
	}
	if c.Client.RefreshProxyName != "" {
		v.proxyRef("client.refresh_proxy_name", c.Client.RefreshProxyName, named, nil)
	} else if cp.Refresh.Enabled {
		v.proxy("client.proxy.refresh", &cp.Refresh.Proxy, true)
	}
	if c.Client.UserStatusProxyName != "" {
		v.proxyRef("client.user_status_proxy_name", c.Client.UserStatusProxyName, named, nil)
	} else if cp.UserStatus.Enabled {
		v.proxy("client.proxy.user_status", &cp.UserStatus.Proxy, true)
	}
	chp := &c.Channel.Proxy
	v.proxy("channel.proxy.subscribe", &chp.Subscribe, false)
	v.proxy("channel.proxy.publish", &chp.Publish, false)
	v.proxy("channel.proxy.sub_refresh", &chp.SubRefresh, false)
	v.proxy("channel.proxy.subscribe_stream", &chp.SubscribeStream, false)
	v.proxy("channel.proxy.map_publish", &chp.MapPublish, false)
	v.proxy("channel.proxy.map_remove", &chp.MapRemove, false)
	v.proxy("channel.proxy.state", &chp.State, false)
	v.proxy("channel.proxy.cache_empty", &chp.CacheEmpty, false)
	v.proxy("channel.proxy.shared_poll_refresh", &chp.SharedPollRefresh, false)
	v.proxy("rpc.proxy", &c.RPC.Proxy, false)

	nsProxies := func(path string, o *ChannelOptions) {
		if o.SubscribeProxyEnabled {
			v.proxyRef(path+".subscribe_proxy_name", o.SubscribeProxyName, named, &chp.Subscribe)
		}
		if o.PublishProxyEnabled {
			v.proxyRef(path+".publish_proxy_name", o.PublishProxyName, named, &chp.Publish)
		}
		if o.SubRefreshProxyEnabled {
			v.proxyRef(path+".sub_refresh_proxy_name", o.SubRefreshProxyName, named, &chp.SubRefresh)
		}
		if o.SubscribeStreamProxyEnabled {
			v.streamProxy(path, c, o)
		}
		if o.StateProxyEnabled {
			v.proxyRef(path+".state_proxy_name", o.StateProxyName, named, &chp.State)
		}
		if o.CacheEmptyProxyEnabled {
			v.proxyRef(path+".cache_empty_proxy_name", o.CacheEmptyProxyName, named, &chp.CacheEmpty)
			if o.HistorySize == 0 {
				v.fail(path+".cache_empty_proxy_enabled", "needs history (history_size and history_ttl): the backend is asked to publish into it")
			}
		}
		if o.Map.PublishProxyEnabled {
			v.proxyRef(path+".map.publish_proxy_name", o.Map.PublishProxyName, named, &chp.MapPublish)
		}
		if o.Map.RemoveProxyEnabled {
			v.proxyRef(path+".map.remove_proxy_name", o.Map.RemoveProxyName, named, &chp.MapRemove)
		}
	}
	nsProxies("channel.without_namespace", &c.Channel.WithoutNamespace)
	for i := range c.Channel.Namespaces {
		nsProxies("channel.namespaces["+strconv.Itoa(i)+"]", &c.Channel.Namespaces[i].ChannelOptions)
	}

	if o := &c.RPC.WithoutNamespace; o.ProxyEnabled {
		v.proxyRef("rpc.without_namespace.proxy_name", o.ProxyName, named, &c.RPC.Proxy)
	}
	seen := map[string]bool{}
	for i, ns := range c.RPC.Namespaces {
		path := "rpc.namespaces[" + strconv.Itoa(i) + "]"
		switch {
		case !namespaceName.MatchString(ns.Name):
			v.fail(path+".name", "invalid namespace name %q: must match %s", ns.Name, namespaceName)
		case seen[ns.Name]:
			v.fail(path+".name", "namespace %q is defined twice", ns.Name)
		}
		seen[ns.Name] = true
		if ns.ProxyEnabled {
			v.proxyRef(path+".proxy_name", ns.ProxyName, named, &c.RPC.Proxy)
		}
	}
	if c.RPC.Ping.Enabled && c.RPC.Ping.Method == "" {
		v.fail("rpc.ping.method", "must be set when rpc.ping is enabled")
	}
}

// proxyRef checks that name refers to a usable proxy: "default" is def (a
// default proxy, which must then have an endpoint), any other name one of
// the proxies list.
func (v *validator) proxyRef(path, name string, named map[string]bool, def *Proxy) {
	if name == "default" && def != nil {
		if def.Endpoint == "" {
			v.fail(path, "the default proxy has no endpoint (set its endpoint, or name a proxy from proxies)")
		}
		return
	}
	if !named[name] {
		v.fail(path, "proxy %q is not defined in proxies", name)
	}
}

// proxy checks one proxy; an empty endpoint is an error only when the
// proxy is in use (required).
func (v *validator) proxy(path string, p *Proxy, required bool) {
	if p.Endpoint == "" {
		if required {
			v.fail(path+".endpoint", "must be set")
		}
		return
	}
	u, err := url.Parse(p.Endpoint)
	switch {
	case err != nil:
		v.fail(path+".endpoint", "invalid URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "grpc":
		v.fail(path+".endpoint", "scheme must be http, https or grpc, got %q", u.Scheme)
	case u.Host == "":
		v.fail(path+".endpoint", "has no host")
	}
	v.staticHeaders(path+".http.static_headers", p.HTTP.StaticHeaders)
	if p.GRPC.CredentialsKey == "" && p.GRPC.CredentialsValue != "" {
		v.fail(path+".grpc.credentials_key", "must be set with credentials_value")
	}
	for i, t := range p.HTTP.StatusToCodeTransforms {
		tp := path + ".http.status_to_code_transforms[" + strconv.Itoa(i) + "]"
		switch {
		case t.StatusCode == 0:
			v.fail(tp+".status_code", "must be set")
		case t.ToError.Code == 0 && t.ToDisconnect.Code == 0:
			v.fail(tp, "needs to_error.code or to_disconnect.code")
		case t.ToError.Code != 0 && t.ToDisconnect.Code != 0:
			v.fail(tp, "takes to_error or to_disconnect, not both")
		}
		if !isASCII(t.ToDisconnect.Reason) || len(t.ToDisconnect.Reason) > 32 {
			v.fail(tp+".to_disconnect.reason", "must be ASCII, at most 32 bytes")
		}
		if !isASCII(t.ToError.Message) {
			v.fail(tp+".to_error.message", "must be ASCII")
		}
	}
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// streamProxy checks a namespace's subscription streams: a gRPC proxy,
// and none of the proxies that would decide the same subscriptions
// another way (as Centrifugo refuses them too).
func (v *validator) streamProxy(path string, c *Config, o *ChannelOptions) {
	if o.SubscribeProxyEnabled || o.PublishProxyEnabled || o.SubRefreshProxyEnabled {
		v.fail(path+".subscribe_stream_proxy_enabled", "cannot be used with subscribe, publish or sub_refresh proxies in the same namespace")
	}
	name := o.SubscribeStreamProxyName
	endpoint := ""
	if name == "default" {
		endpoint = c.Channel.Proxy.SubscribeStream.Endpoint
		if endpoint == "" {
			v.fail(path+".subscribe_stream_proxy_name", "the default proxy has no endpoint (set channel.proxy.subscribe_stream.endpoint, or name a proxy from proxies)")
			return
		}
	} else {
		for _, p := range c.Proxies {
			if p.Name == name {
				endpoint = p.Endpoint
			}
		}
		if endpoint == "" {
			v.fail(path+".subscribe_stream_proxy_name", "proxy %q is not defined in proxies", name)
			return
		}
	}
	if !strings.HasPrefix(endpoint, "grpc://") {
		v.fail(path+".subscribe_stream_proxy_name", "subscription streams need a grpc:// endpoint, proxy %q has %q", name, endpoint)
	}
}

// Notices lists settings that work, but not as a Centrifugo user may
// expect; the server starts with them and says so.
func (c *Config) Notices() []string {
	var out []string
	if c.UniGRPC.Enabled && !c.UniGRPC.TLS.Enabled && c.GRPCAPI.TLS.Enabled {
		// Centrifugo v6 serves uni_grpc with grpc_api's TLS settings.
		out = append(out, "config: uni_grpc serves plain gRPC: it takes its TLS from uni_grpc.tls, not from grpc_api.tls (set uni_grpc.tls to encrypt it)")
	}
	out = append(out, c.hookProxyNotices()...)
	out = append(out, c.sharedPollNotices()...)
	return append(out, c.otelNotices()...)
}
