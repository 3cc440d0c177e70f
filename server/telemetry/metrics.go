package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	prombridge "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/gyrehq/gyre/server/config"
)

// counters are the span processor's own series.
type counters struct {
	exported, queueFull, exportFailed prometheus.Counter
}

func newCounters(reg prometheus.Registerer) (*counters, error) {
	exported := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "gyre", Subsystem: "otel", Name: "spans_exported_total",
		Help: "Spans the OTLP exporter accepted (opentelemetry.enabled).",
	})
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "gyre", Subsystem: "otel", Name: "spans_dropped_total",
		Help: "Spans dropped, by reason: queue_full (the export queue, OTEL_BSP_MAX_QUEUE_SIZE, was full), export_failed (their export failed or timed out).",
	}, []string{"reason"})
	c := &counters{exported: exported, queueFull: dropped.WithLabelValues("queue_full"), exportFailed: dropped.WithLabelValues("export_failed")}
	if reg == nil {
		return c, nil
	}
	for _, m := range []prometheus.Collector{exported, dropped} {
		if err := reg.Register(m); err != nil {
			return nil, fmt.Errorf("telemetry: register metrics: %w", err)
		}
	}
	return c, nil
}

// newMetricsPush pushes what g gathers over OTLP, through the Prometheus
// bridge, every OTEL_METRIC_EXPORT_INTERVAL (which the reader reads).
func newMetricsPush(ctx context.Context, protocol string, g prometheus.Gatherer, res *resource.Resource, log *slog.Logger) (*sdkmetric.MeterProvider, error) {
	var exp sdkmetric.Exporter
	var err error
	if protocol == config.OTLPGRPC {
		exp, err = otlpmetricgrpc.New(ctx)
	} else {
		exp, err = otlpmetrichttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP %s metric exporter: %w", protocol, err)
	}
	reader := sdkmetric.NewPeriodicReader(&loggedMetricExporter{Exporter: exp, log: log},
		sdkmetric.WithProducer(prombridge.NewMetricProducer(prombridge.WithGatherer(g))))
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res)), nil
}

// loggedMetricExporter says once when pushing metrics begins to fail and
// once when it works again. It keeps the error from the reader, which
// would hand every one to OpenTelemetry's global handler (a line on
// stderr per interval).
type loggedMetricExporter struct {
	sdkmetric.Exporter
	log     *slog.Logger
	mu      sync.Mutex
	failing bool
}

func (e *loggedMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := e.Exporter.Export(ctx, rm)
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case err != nil && !e.failing:
		e.failing = true
		e.log.Warn("opentelemetry: metrics export failed; retried every interval until it succeeds", "error", err)
	case err == nil && e.failing:
		e.failing = false
		e.log.Info("opentelemetry: metrics export recovered")
	}
	return nil
}
