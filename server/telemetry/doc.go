// Package telemetry sets up OpenTelemetry for the server: the tracer
// provider that the server API, the proxies and the consumers are given,
// the engine's delivery tracer (a fanout span per traced publication and
// node), and, when asked, the push of the Prometheus metrics over OTLP.
//
// Where telemetry goes is configured by the standard environment
// (OTEL_EXPORTER_OTLP_*, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_METRIC_EXPORT_INTERVAL), read by
// config.OpenTelemetry.ReadOTelEnv, the SDK and the exporters;
// docs/observability.md says which variable does what.
//
// # Cost
//
// Off (opentelemetry.enabled false), New builds nothing and every
// accessor returns nil, which the callers take for "do not trace". On,
// ending a span never waits for the exporter: spans go to a bounded queue
// that one goroutine exports in batches, and what does not fit is dropped
// and counted (gyre_otel_spans_dropped_total).
//
// # Propagation
//
// A publication carries the context of the span that published it to
// every node in 25 bytes (EncodeSpanContext, DecodeSpanContext): the
// trace id, the span id and the trace flags; the trace state stays behind.
package telemetry
