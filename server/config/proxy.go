package config

import "time"

// Proxy configures calls to the application backend for one kind of event
// (connect, subscribe, publish ...). The endpoint's scheme picks the
// protocol: http:// or https:// posts JSON, grpc:// calls Centrifugo's
// proxy service (docs/proxy.md).
type Proxy struct {
	Endpoint              string        `key:"endpoint" help:"Backend URL: http://, https:// (JSON over HTTP POST) or grpc://host:port (gRPC)."`
	Timeout               time.Duration `key:"timeout" default:"1s" min:"1ns" help:"How long one call may take before the client gets an internal error (100)."`
	HTTPHeaders           []string      `key:"http_headers" help:"Names of client request headers forwarded to the backend (as HTTP headers, or gRPC metadata)."`
	GRPCMetadata          []string      `key:"grpc_metadata" help:"Names of gRPC metadata keys of gRPC clients forwarded to the backend."`
	EmulatedHeaders       []string      `key:"emulated_headers" help:"Names of headers a client sent in its connect command (headers emulation, for browsers that cannot set real ones) forwarded to the backend. Their values are the client's own: list only what the backend checks as untrusted input (a signed token), never a header it trusts because a reverse proxy sets it; http_headers never forwards these."`
	BinaryEncoding        bool          `key:"binary_encoding" help:"Send payloads base64-encoded (b64data, b64info) instead of as raw JSON."`
	IncludeConnectionMeta bool          `key:"include_connection_meta" help:"Send the connection's meta (from the connect token or connect proxy) with each call."`
	HTTP                  ProxyHTTP     `key:"http" help:"Options of HTTP endpoints."`
	GRPC                  ProxyGRPC     `key:"grpc" help:"Options of gRPC endpoints."`
}

// ProxyHTTP holds the options of a proxy with an HTTP endpoint.
type ProxyHTTP struct {
	TLS                    TLS                     `key:"tls" help:"TLS of https:// endpoints: CA to trust, client certificate, server name."`
	StatusToCodeTransforms []StatusToCodeTransform `key:"status_to_code_transforms" help:"Turn HTTP statuses of the backend into client errors or disconnects instead of 100."`
	StaticHeaders          map[string]string       `key:"static_headers" help:"Fixed headers sent with every request to the backend, e.g. {\"Authorization\": \"Bearer ...\"}; they win over client headers of the same name (http_headers, emulated_headers)."`
}

// StatusToCodeTransform turns one HTTP status of the backend into an error
// or a disconnect for the client.
type StatusToCodeTransform struct {
	StatusCode   int                 `key:"status_code" help:"HTTP status to transform."`
	ToError      TransformError      `key:"to_error" help:"Error the client gets."`
	ToDisconnect TransformDisconnect `key:"to_disconnect" help:"Disconnect the client gets (instead of an error)."`
}

// TransformError is an error of the client protocol.
type TransformError struct {
	Code      int    `key:"code" min:"0" max:"4294967295" help:"Error code."`
	Message   string `key:"message" help:"Error message."`
	Temporary bool   `key:"temporary" help:"Mark the error temporary (the SDKs retry)."`
}

// TransformDisconnect is a disconnect of the client protocol.
type TransformDisconnect struct {
	Code   int    `key:"code" min:"0" max:"4294967295" help:"Disconnect code."`
	Reason string `key:"reason" help:"Disconnect reason (ASCII, at most 32 bytes)."`
}

// ProxyGRPC holds the options of a proxy with a grpc:// endpoint.
type ProxyGRPC struct {
	TLS              TLS           `key:"tls" help:"TLS of the gRPC connection; off dials in plain text."`
	CredentialsKey   string        `key:"credentials_key" help:"Metadata key sent with every call (per-RPC credentials)."`
	CredentialsValue string        `key:"credentials_value" help:"Value of credentials_key."`
	Compression      bool          `key:"compression" help:"Compress calls with gzip."`
	StaticMetadata   Unimplemented `effect:"any" key:"static_metadata" help:"Fixed metadata added to every gRPC proxy call." unsupported:"Pass fixed values with grpc.credentials_key and grpc.credentials_value, or from the client with grpc_metadata."`
}

// NamedProxy is a proxy in the top-level proxies list, referred to by name
// from namespaces (subscribe_proxy_name, rpc proxy_name ...).
type NamedProxy struct {
	Name string `key:"name" help:"Unique name: at least two of letters, digits, '-', '_' and '.'."`
	Proxy
}

// ClientProxy holds the connection-wide proxies.
type ClientProxy struct {
	Connect    EnabledProxy `key:"connect" help:"Decide connections without a token at the backend."`
	Refresh    EnabledProxy `key:"refresh" help:"Prolong expiring connections at the backend (server-side refresh)."`
	UserStatus EnabledProxy `key:"user_status" help:"Tell the backend when a user comes online (a first connection anywhere) or goes offline (the last one closed everywhere), in batches (see docs/event-hooks.md)."`
}

// EnabledProxy is a proxy that is off until enabled.
type EnabledProxy struct {
	Enabled bool `key:"enabled" help:"Turn the proxy on."`
	Proxy
}

// ChannelProxy holds the default channel-wide proxies, used by namespaces
// that enable them with the proxy name "default".
type ChannelProxy struct {
	Subscribe       Proxy `key:"subscribe" help:"Decide subscribe commands at the backend (namespaces set subscribe_proxy_enabled)."`
	Publish         Proxy `key:"publish" help:"Decide (and rewrite) client publications at the backend (namespaces set publish_proxy_enabled)."`
	SubRefresh      Proxy `key:"sub_refresh" help:"Prolong expiring subscriptions at the backend (namespaces set sub_refresh_proxy_enabled)."`
	SubscribeStream Proxy `key:"subscribe_stream" help:"Subscriptions streamed from the backend over gRPC (grpc:// endpoints only)."`
	MapPublish      Proxy `key:"map_publish" help:"Decide (and rewrite) clients' writes into map channels at the backend (namespaces set map.publish_proxy_enabled)."`
	MapRemove       Proxy `key:"map_remove" help:"Decide clients' removals from map channels at the backend (namespaces set map.remove_proxy_enabled)."`
	State           Proxy `key:"state" help:"Tell the backend when a channel is occupied (its first subscriber anywhere) or vacated (its last one gone everywhere), in batches (namespaces set state_proxy_enabled; see docs/event-hooks.md)."`
	CacheEmpty      Proxy `key:"cache_empty" help:"Ask the backend to publish a channel's state when a subscriber in cache recovery mode finds no publication (namespaces set cache_empty_proxy_enabled)."`
	// SharedPollRefresh reads only endpoint, timeout, http (tls,
	// static_headers) and grpc: its calls are made for no client, so
	// there are no client headers, metadata or meta to forward.
	SharedPollRefresh Proxy `key:"shared_poll_refresh" help:"Poll the backend for the values of the keys clients track in shared_poll channels (namespaces whose shared_poll.proxy_name is empty or \"default\")."`
}

// RPC configures client RPC calls.
type RPC struct {
	Proxy             Proxy          `key:"proxy" help:"Default RPC proxy, used by RPC namespaces that enable it with the proxy name \"default\"."`
	WithoutNamespace  RPCOptions     `key:"without_namespace" help:"Options of RPC methods without a namespace."`
	Namespaces        []RPCNamespace `key:"namespaces" help:"RPC namespaces: a method ns:rest takes the options of namespace ns."`
	Ping              RPCPing        `key:"ping" help:"A built-in RPC method that answers without the backend."`
	NamespaceBoundary string         `key:"namespace_boundary" default:":" nonempty:"true" help:"Separates the namespace from the rest of an RPC method."`
}

// RPCNamespace is a named set of RPC options.
type RPCNamespace struct {
	Name string `key:"name" help:"Namespace name: at least two of letters, digits, '-', '_' and '.'; unique."`
	RPCOptions
}

// RPCOptions are the options of a group of RPC methods.
type RPCOptions struct {
	ProxyEnabled bool   `key:"proxy_enabled" help:"Send these RPC calls to the backend."`
	ProxyName    string `key:"proxy_name" default:"default" help:"Proxy to use: \"default\" (rpc.proxy) or a name from proxies."`
}

// RPCPing configures the built-in ping method.
type RPCPing struct {
	Enabled bool   `key:"enabled" help:"Answer RPC calls of the ping method with an empty result."`
	Method  string `key:"method" default:"ping" help:"Name of the ping method."`
}
