package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre/server/config"
)

// Config configures New. Only OpenTelemetry.Enabled is needed to turn
// telemetry on; the rest comes from the environment (config.OTelEnv).
type Config struct {
	// OpenTelemetry says what is traced (the opentelemetry keys).
	config.OpenTelemetry
	// NodeID is the node's id: the resource's service.instance.id and
	// the fanout spans' gyre.node.
	NodeID string
	// Version is the server's version: service.version.
	Version string
	// Registerer takes the span processor's counters; nil registers none.
	Registerer prometheus.Registerer
	// Gatherer is what the metrics part pushes over OTLP; nil pushes
	// nothing even with Metrics on.
	Gatherer prometheus.Gatherer
	// Logger takes the start-up line and one line per episode of export
	// failures; nil logs nothing.
	Logger *slog.Logger
}

// Telemetry holds the tracer provider and, with metrics on, the meter
// provider that pushes the Prometheus metrics. A Telemetry that is off
// (and a nil one) hands out nil providers and tracers: the callers then
// trace nothing, at no cost.
type Telemetry struct {
	cfg      Config
	env      *config.OTelEnv
	tp       *sdktrace.TracerProvider
	proc     *processor
	mp       *sdkmetric.MeterProvider
	delivery trace.Tracer // nil unless delivery is on
}

// scope is the instrumentation scope of the spans made here.
const scope = "github.com/gyrehq/gyre"

// New sets up what cfg turns on. Off, it returns a Telemetry that hands
// out nothing. On, it reads the OpenTelemetry environment (refusing what
// the exporters would not do as asked), builds the resource, the OTLP
// exporter of the protocol asked for, the bounded span processor and, with
// Metrics, the metrics push. Nothing connects yet: the exporters dial on
// their first export.
func New(ctx context.Context, cfg Config) (*Telemetry, error) {
	if !cfg.Enabled {
		return &Telemetry{cfg: cfg}, nil
	}
	env, err := cfg.ReadOTelEnv(os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	exp, err := newSpanExporter(ctx, env.TracesProtocol)
	if err != nil {
		return nil, err
	}
	t, err := start(ctx, cfg, env, exp)
	if err != nil {
		return nil, errors.Join(err, exp.Shutdown(ctx))
	}
	t.logStart()
	return t, nil
}

// newSpanExporter makes the exporter of protocol. Both read the rest of
// OTEL_EXPORTER_OTLP_* themselves; the HTTP one also the protocol, which
// picks JSON or protobuf.
func newSpanExporter(ctx context.Context, protocol string) (sdktrace.SpanExporter, error) {
	var exp sdktrace.SpanExporter
	var err error
	if protocol == config.OTLPGRPC {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP %s span exporter: %w", protocol, err)
	}
	return exp, nil
}

// start builds the providers around exp.
func start(ctx context.Context, cfg Config, env *config.OTelEnv, exp sdktrace.SpanExporter) (*Telemetry, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, err
	}
	counters, err := newCounters(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	t := &Telemetry{cfg: cfg, env: env}
	t.proc = newProcessor(exp, processorConfig{
		queueSize: env.MaxQueueSize, batchSize: env.MaxExportBatchSize,
		delay: env.ScheduleDelay, timeout: env.ExportTimeout,
		exported: counters.exported, queueFull: counters.queueFull, exportFailed: counters.exportFailed,
		log: cfg.Logger,
	})
	// The sampler is the SDK's: OTEL_TRACES_SAMPLER and its argument,
	// parentbased_always_on without them.
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(t.proc))
	if cfg.Delivery {
		t.delivery = t.tp.Tracer(scope)
	}
	if cfg.Metrics && cfg.Gatherer != nil {
		if t.mp, err = newMetricsPush(ctx, env.MetricsProtocol, cfg.Gatherer, res, cfg.Logger); err != nil {
			return nil, errors.Join(err, t.proc.Shutdown(ctx))
		}
	}
	return t, nil
}

// newResource describes this process: service.name gyre, its version and
// the node's id, over which OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
// win.
func newResource(ctx context.Context, cfg Config) (*resource.Resource, error) {
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(
			semconv.ServiceName("gyre"),
			semconv.ServiceVersion(cfg.Version),
			semconv.ServiceInstanceID(cfg.NodeID),
		),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	return res, nil
}

// logStart says that tracing is on, where spans go and what is traced;
// not the headers, which may hold credentials.
func (t *Telemetry) logStart() {
	e := t.env
	traced := []string{}
	for _, p := range []struct {
		name string
		on   bool
	}{{"api", t.cfg.API}, {"consuming", t.cfg.Consuming}, {"proxy", t.cfg.Proxy}, {"delivery", t.cfg.Delivery}} {
		if p.on {
			traced = append(traced, p.name)
		}
	}
	attrs := []any{"protocol", e.TracesProtocol, "endpoint", e.TracesEndpoint, "sampler", e.Sampler, "traced", traced}
	if t.mp != nil {
		attrs = append(attrs, "metrics_protocol", e.MetricsProtocol, "metrics_endpoint", e.MetricsEndpoint)
	}
	t.cfg.Logger.Info("opentelemetry tracing on", attrs...)
}

// TracerProvider is the tracer provider, nil when telemetry is off.
func (t *Telemetry) TracerProvider() trace.TracerProvider {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp
}

// part is the tracer provider for a part that on turns on.
func (t *Telemetry) part(on bool) trace.TracerProvider {
	if !on {
		return nil
	}
	return t.TracerProvider()
}

// APITracerProvider is the tracer provider of the server API (the api
// key), nil unless it is traced.
func (t *Telemetry) APITracerProvider() trace.TracerProvider { return t.part(t != nil && t.cfg.API) }

// ProxyTracerProvider is the tracer provider of the proxies (the proxy
// key), nil unless they are traced.
func (t *Telemetry) ProxyTracerProvider() trace.TracerProvider {
	return t.part(t != nil && t.cfg.Proxy)
}

// ConsumerTracerProvider is the tracer provider of the consumers (the
// consuming key), nil unless they are traced.
func (t *Telemetry) ConsumerTracerProvider() trace.TracerProvider {
	return t.part(t != nil && t.cfg.Consuming)
}

// DeliveryTracer is the engine's delivery tracer (the delivery key), nil
// unless fan-outs are traced.
func (t *Telemetry) DeliveryTracer() DeliveryTracer {
	if t == nil || t.delivery == nil {
		return nil
	}
	return t
}

// Shutdown exports what is queued and stops the exporters, within ctx;
// spans that could not be exported by then are dropped and counted.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	// The processor first, itself: the provider skips its processors when
	// ctx has ended, which would leave the exporter running.
	err := t.proc.Shutdown(ctx)
	if tpErr := t.tp.Shutdown(ctx); err == nil {
		// Else the same error again, from the same processor.
		err = tpErr
	}
	if t.mp != nil {
		err = errors.Join(err, t.mp.Shutdown(ctx))
	}
	if err != nil {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}
