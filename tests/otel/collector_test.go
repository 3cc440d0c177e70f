package otel_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestCollector checks the test setup itself, without Gyre: a span sent
// to Jaeger over each OTLP protocol comes back from the query API with
// its parent, and a metric sent over OTLP comes out of the Prometheus
// exporter labelled with its service. When it fails, the other tests'
// failures say nothing about Gyre.
func TestCollector(t *testing.T) {
	requireJaeger(t)
	t.Parallel()
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run("span over "+proto, func(t *testing.T) {
			t.Parallel()
			service := serviceName(t)
			traceID, spanID, parent := newID(16), newID(8), newID(8)
			var err error
			if proto == "grpc" {
				err = exportSpanGRPC(service, traceID, spanID, parent)
			} else {
				err = exportSpanHTTP(service, traceID, spanID, parent)
			}
			if err != nil {
				t.Fatal(err)
			}
			waitTrace(t, traceID, "the span sent", func(spans []span) string {
				for _, s := range spans {
					if s.SpanID == spanID && s.ParentID == parent && s.Service == service && s.Name == "collector check" && s.Kind == "server" && s.Attrs["gyre.check"] == "7" {
						return ""
					}
				}
				return "no such span"
			})
		})
	}
	t.Run("metric over http/protobuf", func(t *testing.T) {
		t.Parallel()
		service := serviceName(t)
		if err := exportMetricHTTP(service, "gyre_collector_check", 42); err != nil {
			t.Fatal(err)
		}
		waitMetric(t, "gyre_collector_check of "+service, func(samples []sample) bool {
			v, ok := sum(samples, "gyre_collector_check", func(l map[string]string) bool { return l["service_name"] == service })
			return ok && v == 42
		})
	})
}

// waitMetric polls the Prometheus exporter of Jaeger until found is
// content.
func waitMetric(t testing.TB, what string, found func([]sample) bool) []sample {
	t.Helper()
	deadline := time.Now().Add(traceLimit)
	for {
		samples, err := scrape("http://" + jaeger.prom + "/metrics")
		if err == nil && found(samples) {
			return samples
		}
		if time.Now().After(deadline) {
			var names []string
			for _, s := range samples {
				if len(names) < 40 {
					names = append(names, fmt.Sprintf("%s%v", s.Name, s.Labels))
				}
			}
			t.Fatalf("gave up after %v waiting for %s on Jaeger's Prometheus exporter (error: %v); first samples: %s", traceLimit, what, err, strings.Join(names, "\n  "))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// exportSpanHTTP posts one span to the OTLP/HTTP receiver, in OTLP's JSON
// encoding (which the receiver takes as well as protobuf).
func exportSpanHTTP(service, traceID, spanID, parent string) error {
	now := time.Now()
	body := fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":%q}}]},
"scopeSpans":[{"scope":{"name":"gyre-otel-test"},"spans":[{"traceId":%q,"spanId":%q,"parentSpanId":%q,
"name":"collector check","kind":2,"startTimeUnixNano":"%d","endTimeUnixNano":"%d",
"attributes":[{"key":"gyre.check","value":{"intValue":"7"}}]}]}]}]}`,
		service, traceID, spanID, parent, now.Add(-time.Millisecond).UnixNano(), now.UnixNano())
	return postOTLP("/v1/traces", body)
}

// exportMetricHTTP posts one monotonic sum to the OTLP/HTTP receiver.
func exportMetricHTTP(service, name string, value int) error {
	now := time.Now()
	body := fmt.Sprintf(`{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":%q}}]},
"scopeMetrics":[{"scope":{"name":"gyre-otel-test"},"metrics":[{"name":%q,"sum":{"aggregationTemporality":2,"isMonotonic":false,
"dataPoints":[{"asInt":"%d","startTimeUnixNano":"%d","timeUnixNano":"%d"}]}}]}]}]}`,
		service, name, value, now.Add(-time.Second).UnixNano(), now.UnixNano())
	return postOTLP("/v1/metrics", body)
}

func postOTLP(path, body string) error {
	resp, err := quickHTTP.Post("http://"+jaeger.otlpHTTP+path, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: HTTP %d: %s", path, resp.StatusCode, reply)
	}
	return nil
}

// exportSpanGRPC sends one span to the OTLP/gRPC receiver. The request is
// encoded here field by field (opentelemetry/proto/collector/trace/v1),
// which spares the module a dependency on the OTLP's generated code for
// one test.
func exportSpanGRPC(service, traceID, spanID, parent string) error {
	ids := make([][]byte, 3)
	for i, h := range []string{traceID, spanID, parent} {
		b, err := hex.DecodeString(h)
		if err != nil {
			return err
		}
		ids[i] = b
	}
	now := time.Now()
	str := func(v string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), v)
	} // AnyValue.string_value
	keyValue := func(key string, value []byte) []byte {
		b := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), key)
		return protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), value)
	}
	msg := func(b []byte, field protowire.Number, m []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, field, protowire.BytesType), m)
	}
	intValue := protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 7) // AnyValue.int_value

	var sp []byte
	sp = msg(sp, 1, ids[0])                                                                         // trace_id
	sp = msg(sp, 2, ids[1])                                                                         // span_id
	sp = msg(sp, 4, ids[2])                                                                         // parent_span_id
	sp = protowire.AppendString(protowire.AppendTag(sp, 5, protowire.BytesType), "collector check") // name
	sp = protowire.AppendVarint(protowire.AppendTag(sp, 6, protowire.VarintType), 2)                // kind: server
	sp = protowire.AppendFixed64(protowire.AppendTag(sp, 7, protowire.Fixed64Type), uint64(now.Add(-time.Millisecond).UnixNano()))
	sp = protowire.AppendFixed64(protowire.AppendTag(sp, 8, protowire.Fixed64Type), uint64(now.UnixNano()))
	sp = msg(sp, 9, keyValue("gyre.check", intValue)) // attributes

	scope := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "gyre-otel-test")
	scopeSpans := msg(msg(nil, 1, scope), 2, sp)
	resource := msg(nil, 1, keyValue("service.name", str(service)))
	resourceSpans := msg(msg(nil, 1, resource), 2, scopeSpans)
	req := msg(nil, 1, resourceSpans)

	conn, err := grpc.NewClient(jaeger.otlpGRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var reply []byte
	err = conn.Invoke(ctx, "/opentelemetry.proto.collector.trace.v1.TraceService/Export", &req, &reply, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return fmt.Errorf("OTLP/gRPC export: %w", err)
	}
	return nil
}

// rawCodec hands gRPC messages already encoded: a *[]byte each way.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

// Name is that of the codec the receiver expects (application/grpc+proto).
func (rawCodec) Name() string { return "proto" }
