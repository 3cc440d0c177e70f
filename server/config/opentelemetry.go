package config

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// OpenTelemetry configures tracing over OTLP. Where the spans go, and how,
// is set by the standard OTEL_* environment variables (see OTelEnv); these
// keys say only what is traced.
type OpenTelemetry struct {
	Enabled            bool `key:"enabled" help:"Export traces over OTLP (docs/observability.md). The exporter is configured by the standard environment: OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf, the default, or grpc), OTEL_SERVICE_NAME (default gyre), OTEL_TRACES_SAMPLER, OTEL_BSP_* ... Off, nothing is set up and nothing else of this section takes effect."`
	API                bool `key:"api" help:"Trace the server API: a SERVER span for each HTTP or gRPC API call, continuing the caller's traceparent; a publication it makes carries the span's context to the fan-out on every node (see delivery)."`
	Consuming          bool `key:"consuming" help:"Trace the consumers: a CONSUMER span for each message consumed, the child of the traceparent the message carries where its source has headers (Kafka, JetStream, a Redis stream field)."`
	GoogleCloudADCAuth bool `key:"google_cloud_adc_auth" help:"Centrifugo's export straight to Google Cloud, authenticated with Application Default Credentials." refused:"Gyre does not authenticate to Google Cloud itself; run an OpenTelemetry Collector that does (with its Google client auth extension), point OTEL_EXPORTER_OTLP_ENDPOINT at it, and remove the key."`
	Proxy              bool `key:"proxy" help:"A Gyre key: trace the calls to proxies (connect, refresh, subscribe, publish, sub_refresh, subscribe_stream, rpc) with a CLIENT span each, and send its traceparent to the backend in the HTTP headers or gRPC metadata."`
	Delivery           bool `key:"delivery" help:"A Gyre key: a fanout span on each node for every traced publication handed to its subscribers there, the child of the span that published it (api or consuming must be on for publications to carry one)."`
	Metrics            bool `key:"metrics" help:"A Gyre key: also push the Prometheus metrics (the series of the prometheus endpoint, whether it is served or not) over OTLP, every OTEL_METRIC_EXPORT_INTERVAL milliseconds (default 60000), with OTEL_EXPORTER_OTLP_METRICS_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL."`
}

// otelNotices are the notices about opentelemetry keys that cannot take
// effect as set.
func (c *Config) otelNotices() []string {
	o := c.OpenTelemetry
	if !o.Enabled {
		if o.API || o.Consuming || o.Proxy || o.Delivery || o.Metrics {
			return []string{"config: opentelemetry.enabled is false: its other keys take no effect and nothing is traced"}
		}
		return nil
	}
	if o.Delivery && !o.API && !o.Consuming {
		return []string{"config: opentelemetry.delivery without api or consuming: what this node publishes carries no trace context; fanout spans are made only for publications traced on other nodes"}
	}
	return nil
}

// OTLP protocols, as OTEL_EXPORTER_OTLP_PROTOCOL names them.
const (
	OTLPHTTPProtobuf = "http/protobuf"
	OTLPHTTPJSON     = "http/json"
	OTLPGRPC         = "grpc"
)

// OTelEnv is what Gyre reads of the OpenTelemetry environment itself; the
// OTLP exporters read the rest on their own (endpoints, headers, timeout,
// TLS certificates, insecure, compression), and the SDK the resource
// attributes and the sampler's argument.
type OTelEnv struct {
	// TracesProtocol is http/protobuf, http/json or grpc:
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
	// else http/protobuf.
	TracesProtocol string
	// MetricsProtocol is http/protobuf or grpc, likewise from
	// OTEL_EXPORTER_OTLP_METRICS_PROTOCOL; the Go metric exporters have
	// no http/json.
	MetricsProtocol string
	// TracesEndpoint and MetricsEndpoint are where the exporters send, for
	// the log: from the variables, without user information or query
	// (they may hold secrets), or the exporters' default.
	TracesEndpoint, MetricsEndpoint string
	// Sampler is OTEL_TRACES_SAMPLER, parentbased_always_on by default,
	// with its argument when it takes one.
	Sampler string
	// The span processor's bounds, from OTEL_BSP_MAX_QUEUE_SIZE,
	// OTEL_BSP_MAX_EXPORT_BATCH_SIZE (at most the queue's size),
	// OTEL_BSP_SCHEDULE_DELAY and OTEL_BSP_EXPORT_TIMEOUT (milliseconds),
	// with the specification's defaults: 2048, 512, 5 s, 30 s.
	MaxQueueSize, MaxExportBatchSize int
	ScheduleDelay, ExportTimeout     time.Duration
}

// ReadOTelEnv reads the OpenTelemetry environment through lookup (as
// os.LookupEnv) for the parts o turns on, and refuses what the exporters
// would not do as asked: an unknown protocol, http/json for metrics, an
// unknown sampler, a bound that is not a positive integer. Each error names
// the variable.
func (o *OpenTelemetry) ReadOTelEnv(lookup func(string) (string, bool)) (*OTelEnv, error) {
	r := envReader{lookup: lookup}
	e := &OTelEnv{
		TracesProtocol:     r.protocol("TRACES", false),
		Sampler:            r.sampler(),
		MaxQueueSize:       r.positive("OTEL_BSP_MAX_QUEUE_SIZE", 2048),
		MaxExportBatchSize: r.positive("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
		ScheduleDelay:      time.Duration(r.positive("OTEL_BSP_SCHEDULE_DELAY", 5000)) * time.Millisecond,
		ExportTimeout:      time.Duration(r.positive("OTEL_BSP_EXPORT_TIMEOUT", 30000)) * time.Millisecond,
	}
	e.TracesEndpoint = r.endpoint("TRACES", e.TracesProtocol)
	// As the specification says, and the SDK's own processor does.
	e.MaxExportBatchSize = min(e.MaxExportBatchSize, e.MaxQueueSize)
	if o.Metrics {
		e.MetricsProtocol = r.protocol("METRICS", true)
		e.MetricsEndpoint = r.endpoint("METRICS", e.MetricsProtocol)
		r.positive("OTEL_METRIC_EXPORT_INTERVAL", 60000)
		r.positive("OTEL_METRIC_EXPORT_TIMEOUT", 30000)
	}
	return e, errors.Join(r.errs...)
}

// EnvironLookup turns an environment as "NAME=value" lines (os.Environ)
// into a lookup like os.LookupEnv; the last line of a name wins.
func EnvironLookup(environ []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		value, found := "", false
		for _, kv := range environ {
			if n, v, ok := strings.Cut(kv, "="); ok && n == name {
				value, found = v, true
			}
		}
		return value, found
	}
}

type envReader struct {
	lookup func(string) (string, bool)
	errs   []error
}

func (r *envReader) fail(name, format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf("config: %s: %s", name, fmt.Sprintf(format, args...)))
}

// get is the value of the variable, trimmed; "" when unset or empty,
// which the specification treats alike.
func (r *envReader) get(name string) string {
	v, _ := r.lookup(name)
	return strings.TrimSpace(v)
}

// protocol is the OTLP protocol of a signal: its own variable, else the
// general one, else http/protobuf.
func (r *envReader) protocol(signal string, metrics bool) string {
	name := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	v := r.get(name)
	if v == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		v = r.get(name)
	}
	switch v {
	case "":
		return OTLPHTTPProtobuf
	case OTLPHTTPProtobuf, OTLPGRPC:
		return v
	case OTLPHTTPJSON:
		if !metrics {
			return v
		}
		r.fail(name, "%q is not supported for metrics (opentelemetry.metrics): the Go OTLP metric exporters send http/protobuf or grpc only; set OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/protobuf", v)
	default:
		r.fail(name, "unknown OTLP protocol %q (allowed: %q, %q, %q)", v, OTLPHTTPProtobuf, OTLPHTTPJSON, OTLPGRPC)
	}
	return OTLPHTTPProtobuf
}

// endpoint is where a signal goes, for the log: its own variable as is,
// else the general one (to which OTLP/HTTP adds the signal's path), else
// the exporters' default; without user information or query, which may
// hold secrets.
func (r *envReader) endpoint(signal, protocol string) string {
	v := r.get("OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT")
	if v == "" {
		v = r.get("OTEL_EXPORTER_OTLP_ENDPOINT")
		switch {
		case v == "" && protocol == OTLPGRPC:
			return "localhost:4317 (default, TLS)"
		case v == "":
			return "https://localhost:4318/v1/" + strings.ToLower(signal) + " (default)"
		case protocol != OTLPGRPC:
			v = strings.TrimSuffix(v, "/") + "/v1/" + strings.ToLower(signal)
		}
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		// A grpc target without a scheme, or something the exporter
		// will refuse; either way not a URL to clean.
		if i := strings.LastIndex(v, "@"); i >= 0 {
			v = v[i+1:]
		}
		return v
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return u.String()
}

// samplers are the values of OTEL_TRACES_SAMPLER the SDK knows; true for
// those that take a ratio as OTEL_TRACES_SAMPLER_ARG.
var samplers = map[string]bool{
	"always_on": false, "always_off": false, "traceidratio": true,
	"parentbased_always_on": false, "parentbased_always_off": false, "parentbased_traceidratio": true,
}

// sampler checks OTEL_TRACES_SAMPLER and its argument, which the SDK
// would otherwise replace by its default with a line on stderr.
func (r *envReader) sampler() string {
	name := strings.ToLower(r.get("OTEL_TRACES_SAMPLER"))
	if name == "" {
		return "parentbased_always_on"
	}
	ratio, known := samplers[name]
	if !known {
		r.fail("OTEL_TRACES_SAMPLER", "unknown sampler %q (allowed: always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio)", name)
		return name
	}
	arg := r.get("OTEL_TRACES_SAMPLER_ARG")
	if !ratio || arg == "" {
		return name
	}
	if f, err := strconv.ParseFloat(arg, 64); err != nil || f < 0 || f > 1 {
		r.fail("OTEL_TRACES_SAMPLER_ARG", "%q is not a ratio between 0 and 1", arg)
	}
	return name + " " + arg
}

// positive is an integer variable that must be above zero, def when unset.
func (r *envReader) positive(name string, def int) int {
	v := r.get(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		r.fail(name, "%q is not a positive integer", v)
		return def
	}
	return n
}
