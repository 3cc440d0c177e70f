package config

import "time"

// Config is the whole server configuration. Each field's tags give its key in
// a configuration file (key), its default (default), its description (help)
// and, where relevant, the limits Validate enforces (min, max, enum, precision).
// Build one with Default, Load, LoadBytes or Resolve; the zero value lacks the
// defaults.
type Config struct {
	HTTPServer      HTTPServer      `key:"http_server" help:"The HTTP server: where it listens and its TLS."`
	Log             Log             `key:"log" help:"Logging."`
	Engine          Engine          `key:"engine" help:"Broker and presence manager together: memory for one node, redis for many."`
	Broker          Broker          `key:"broker" help:"A broker chosen apart from the engine; overrides engine for PUB/SUB and history when enabled."`
	PresenceManager PresenceManager `key:"presence_manager" help:"A presence manager chosen apart from the engine; overrides engine for presence when enabled."`
	MapBroker       MapBroker       `key:"map_broker" help:"Where map channels (channel subscription_type map, map_clients, map_users) keep their state and stream: memory for one node, redis for many."`
	Client          Client          `key:"client" help:"Real-time client connections: authentication, limits, timers."`
	Channel         Channel         `key:"channel" help:"Channel names, namespaces and per-namespace channel options."`
	SharedPoll      SharedPoll      `key:"shared_poll" help:"What shared_poll channels (subscription_type shared_poll) share: the secret of track signatures, the bound on calls polling the backend."`
	HTTPAPI         HTTPAPI         `key:"http_api" help:"The server HTTP API (POST /api/<method>)."`
	GRPCAPI         GRPCAPI         `key:"grpc_api" help:"The server API over gRPC, on its own port."`
	WebSocket       WebSocket       `key:"websocket" help:"The bidirectional WebSocket transport."`
	SSE             SSE             `key:"sse" help:"Bidirectional emulation over Server-Sent Events."`
	HTTPStream      HTTPStream      `key:"http_stream" help:"Bidirectional emulation over HTTP streaming."`
	UniWebSocket    UniWebSocket    `key:"uni_websocket" help:"The unidirectional WebSocket transport."`
	UniSSE          UniSSE          `key:"uni_sse" help:"The unidirectional Server-Sent Events transport."`
	UniHTTPStream   UniHTTPStream   `key:"uni_http_stream" help:"The unidirectional HTTP streaming transport."`
	UniGRPC         UniGRPC         `key:"uni_grpc" help:"The unidirectional gRPC transport."`
	Emulation       Emulation       `key:"emulation" help:"The endpoint that receives commands of emulated (SSE, HTTP streaming) connections."`
	Admin           Admin           `key:"admin" help:"The admin web interface."`
	Prometheus      Prometheus      `key:"prometheus" help:"The Prometheus metrics endpoint."`
	Health          Health          `key:"health" help:"The health check endpoint."`
	Debug           Debug           `key:"debug" help:"Go profiling endpoints."`
	Node            Node            `key:"node" help:"This node's identity in a cluster."`
	Shutdown        Shutdown        `key:"shutdown" help:"Graceful shutdown."`
	PIDFile         string          `key:"pid_file" help:"Path of a file to write the process ID to; empty writes none."`

	RPC                      RPC           `key:"rpc" help:"Client RPC namespaces and RPC proxying."`
	Proxies                  []NamedProxy  `key:"proxies" help:"Named proxies to the application backend, chosen per namespace by name."`
	Consumers                []Consumer    `key:"consumers" help:"Consumers that read server API commands from a PostgreSQL outbox table, Kafka, Redis streams or NATS JetStream and run them (see docs/consumers.md)."`
	OpenTelemetry            OpenTelemetry `key:"opentelemetry" help:"OpenTelemetry tracing over OTLP, configured by the standard OTEL_* environment variables (see docs/observability.md)."`
	EventHooks               EventHooks    `key:"event_hooks" help:"How channel state and user status events reach the backend: delays, batches, retries, the signature (see docs/event-hooks.md)."`
	WebTransport             Unimplemented `key:"webtransport" help:"The WebTransport transport." unsupported:"Use the WebSocket transport, or SSE/HTTP streaming where WebSocket is blocked."`
	Graphite                 Unimplemented `key:"graphite" help:"Metrics export to Graphite." unsupported:"Gyre exports Prometheus metrics only (prometheus.enabled); scrape them, or forward them to Graphite with a Prometheus exporter."`
	Swagger                  Unimplemented `key:"swagger" help:"Swagger UI for the server API." unsupported:"Gyre serves no Swagger UI; the server API is described in docs/api.md."`
	UsageStats               Unimplemented `key:"usage_stats" help:"Anonymous usage statistics." unsupported:"Gyre sends no usage statistics; remove the key."`
	Dev                      Unimplemented `key:"dev" help:"Development test page." unsupported:"Start gyre without a config file for development defaults and a demo page."`
	Init                     Unimplemented `key:"init" help:"Connection initialization endpoint." unsupported:"Gyre has no connection initialization endpoint; fetch what the page needs from the application before connecting."`
	EnableUnreleasedFeatures Unimplemented `key:"enable_unreleased_features" help:"Switch for unreleased Centrifugo features." unsupported:"Gyre has none of Centrifugo's unreleased features; remove the key."`
}

// Log configures logging.
type Log struct {
	Level string `key:"level" default:"info" enum:"none,trace,debug,info,warn,error,fatal" help:"Lowest level that is logged; none logs nothing."`
	File  string `key:"file" help:"Path of a file to log to; empty logs to standard output."`
}

// Shutdown configures graceful shutdown.
type Shutdown struct {
	Timeout time.Duration `key:"timeout" default:"30s" min:"1ns" help:"How long a graceful shutdown may take before the process exits anyway."`
}

// Node identifies this node among others.
type Node struct {
	Name                         string        `key:"name" help:"Human-readable node name shown in the admin UI and info; empty derives one from host name and port."`
	InfoMetricsAggregateInterval time.Duration `key:"info_metrics_aggregate_interval" default:"60s" min:"1ns" help:"How often per-node counters are aggregated for info and metrics." unsupported:"Gyre reports its counters in info and metrics as they are, not aggregated over an interval; remove the key."`
}

// Unimplemented holds the value of a Centrifugo key that Gyre recognises but
// does not implement. Loading a non-empty value gives a warning; the value is
// kept only so that the warning can be given.
type Unimplemented struct {
	value any
}

// IsSet reports whether the key was given a value other than an empty one
// (null, false, zero, "", or a table or list of only such values).
func (u Unimplemented) IsSet() bool { return meaningful(u.value) }
