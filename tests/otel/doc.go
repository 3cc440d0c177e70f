// Package otel holds the OpenTelemetry tests of Gyre: real gyre processes
// (built once per test run) export their spans and metrics over OTLP, by
// HTTP and by gRPC, to a real Jaeger v2, and the tests read them back
// through Jaeger's query API and its Prometheus exporter.
//
// What the tests show:
//
//   - the collector itself: a span sent over each OTLP protocol comes back
//     from the query API, and a metric from the Prometheus exporter, so
//     that a failure of the others is Gyre's, not the test setup's;
//   - a publication is one trace from the API call to the sockets: the
//     API span is the child of the caller's traceparent, and every node
//     with a subscriber (two nodes on Redis, two on a NATS broker) adds a
//     fanout span under it, naming the node and counting who was reached;
//   - a proxy call carries the trace to the backend: the traceparent an
//     HTTP or gRPC backend receives names the "proxy <kind>" span of the
//     call (connect and rpc);
//   - a hostile traceparent (bad hex, unknown version, oversized, zero
//     ids) is ignored: the call succeeds and starts a trace of its own;
//   - the Prometheus metrics of a node reach the collector over OTLP,
//     labelled with the node's service name;
//   - a collector that is down costs nothing but spans: publishes keep
//     succeeding and gyre_otel_spans_dropped_total counts what was lost.
//
// Jaeger: GYRE_TEST_JAEGER_OTLP_GRPC, GYRE_TEST_JAEGER_OTLP_HTTP,
// GYRE_TEST_JAEGER_QUERY and GYRE_TEST_JAEGER_PROM (host:port each, as
// scripts/start-jaeger prints them; scripts/test sets them) name a running
// one; else the tests start their own with scripts/start-jaeger from the
// binary of scripts/install-jaeger. With GYRE_SKIP_JAEGER=1 they are
// skipped where neither is there; otherwise they fail. The two-node tests
// need redis-server (scripts/install-redis) and nats-server
// (scripts/install-nats), GYRE_SKIP_REDIS and GYRE_SKIP_NATS as elsewhere.
// GYRE_BIN=/path/to/gyre runs them against a binary built elsewhere.
//
// The tests never assert timings: spans arrive in batches, and every check
// polls Jaeger until what it expects is there or a generous limit passes.
package otel
