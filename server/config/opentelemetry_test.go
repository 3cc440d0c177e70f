package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOpenTelemetryKeys(t *testing.T) {
	c, warnings, err := LoadBytes([]byte(`{"opentelemetry": {"enabled": true, "api": true, "consuming": true, "proxy": true, "delivery": true, "metrics": true}}`), "json")
	if err != nil || len(warnings) > 0 {
		t.Fatalf("LoadBytes = %q, %v", warnings, err)
	}
	want := OpenTelemetry{Enabled: true, API: true, Consuming: true, Proxy: true, Delivery: true, Metrics: true}
	if c.OpenTelemetry != want {
		t.Errorf("opentelemetry = %+v, want %+v", c.OpenTelemetry, want)
	}
	if u := c.Unsupported(); len(u) > 0 {
		t.Errorf("Unsupported = %v, want none", u)
	}
}

func TestOpenTelemetryFromEnv(t *testing.T) {
	c, warnings, err := Resolve(Sources{Environ: []string{
		"CENTRIFUGO_OPENTELEMETRY_ENABLED=true",
		"CENTRIFUGO_OPENTELEMETRY_API=true",
		"GYRE_OPENTELEMETRY_DELIVERY=true",
		"GYRE_OPENTELEMETRY_METRICS=1",
	}})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("Resolve = %q, %v", warnings, err)
	}
	want := OpenTelemetry{Enabled: true, API: true, Delivery: true, Metrics: true}
	if c.OpenTelemetry != want {
		t.Errorf("opentelemetry = %+v, want %+v", c.OpenTelemetry, want)
	}
}

func TestOpenTelemetryGoogleADCRefused(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		c := Default()
		c.OpenTelemetry.Enabled = enabled
		c.OpenTelemetry.GoogleCloudADCAuth = true
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "opentelemetry.google_cloud_adc_auth: not supported") || !strings.Contains(err.Error(), "Collector") {
			t.Errorf("enabled %v: Validate = %v, want google_cloud_adc_auth refused, naming a collector", enabled, err)
		}
	}
	c := Default()
	c.OpenTelemetry.GoogleCloudADCAuth = false
	if err := c.Validate(); err != nil {
		t.Errorf("false: Validate = %v", err)
	}
}

func TestOpenTelemetryNotices(t *testing.T) {
	tests := []struct {
		name string
		o    OpenTelemetry
		want string
	}{
		{"off", OpenTelemetry{}, ""},
		{"keys while off", OpenTelemetry{API: true}, "opentelemetry.enabled is false"},
		{"delivery alone", OpenTelemetry{Enabled: true, Delivery: true}, "delivery without api or consuming"},
		{"delivery with api", OpenTelemetry{Enabled: true, API: true, Delivery: true}, ""},
		{"delivery with consuming", OpenTelemetry{Enabled: true, Consuming: true, Delivery: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.OpenTelemetry = tt.o
			got := strings.Join(c.Notices(), "\n")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("Notices = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadOTelEnv(t *testing.T) {
	def := OTelEnv{
		TracesProtocol: OTLPHTTPProtobuf, TracesEndpoint: "https://localhost:4318/v1/traces (default)",
		Sampler:      "parentbased_always_on",
		MaxQueueSize: 2048, MaxExportBatchSize: 512, ScheduleDelay: 5 * time.Second, ExportTimeout: 30 * time.Second,
	}
	with := func(f func(*OTelEnv)) OTelEnv {
		e := def
		f(&e)
		return e
	}
	tests := []struct {
		name    string
		metrics bool
		env     []string
		want    OTelEnv
		wantErr string
	}{
		{name: "defaults", want: def},
		{name: "defaults with metrics", metrics: true, want: with(func(e *OTelEnv) {
			e.MetricsProtocol, e.MetricsEndpoint = OTLPHTTPProtobuf, "https://localhost:4318/v1/metrics (default)"
		})},
		{name: "grpc for all", metrics: true, env: []string{"OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, want: with(func(e *OTelEnv) {
			e.TracesProtocol, e.TracesEndpoint = OTLPGRPC, "localhost:4317 (default, TLS)"
			e.MetricsProtocol, e.MetricsEndpoint = OTLPGRPC, "localhost:4317 (default, TLS)"
		})},
		{name: "per-signal protocol wins", metrics: true, env: []string{
			"OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4317",
		}, want: with(func(e *OTelEnv) {
			e.TracesProtocol, e.TracesEndpoint = OTLPHTTPProtobuf, "http://collector:4317/v1/traces"
			e.MetricsProtocol, e.MetricsEndpoint = OTLPGRPC, "http://collector:4317"
		})},
		{name: "http/json for traces", env: []string{"OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}, want: with(func(e *OTelEnv) { e.TracesProtocol = OTLPHTTPJSON })},
		{name: "http/json for traces, metrics apart", metrics: true, env: []string{
			"OTEL_EXPORTER_OTLP_PROTOCOL=http/json", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/protobuf",
		}, want: with(func(e *OTelEnv) {
			e.TracesProtocol = OTLPHTTPJSON
			e.MetricsProtocol, e.MetricsEndpoint = OTLPHTTPProtobuf, "https://localhost:4318/v1/metrics (default)"
		})},
		{name: "http/json for metrics", metrics: true, env: []string{"OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}, wantErr: `OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" is not supported for metrics`},
		{name: "http/json for metrics alone", metrics: true, env: []string{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/json"}, wantErr: `OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: "http/json" is not supported for metrics`},
		{name: "http/json for metrics while off", env: []string{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/json"}, want: def},
		{name: "unknown protocol", env: []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http"}, wantErr: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: unknown OTLP protocol "http"`},
		{name: "endpoint secrets left out", env: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=https://user:secret@collector.example:4318/v1/traces?token=secret"}, want: with(func(e *OTelEnv) {
			e.TracesEndpoint = "https://collector.example:4318/v1/traces"
		})},
		{name: "grpc target without scheme", env: []string{"OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_ENDPOINT=collector:4317"}, want: with(func(e *OTelEnv) {
			e.TracesProtocol, e.TracesEndpoint = OTLPGRPC, "collector:4317"
		})},
		{name: "sampler", env: []string{"OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.25"}, want: with(func(e *OTelEnv) { e.Sampler = "parentbased_traceidratio 0.25" })},
		{name: "unknown sampler", env: []string{"OTEL_TRACES_SAMPLER=jaeger_remote"}, wantErr: `OTEL_TRACES_SAMPLER: unknown sampler "jaeger_remote"`},
		{name: "bad ratio", env: []string{"OTEL_TRACES_SAMPLER=traceidratio", "OTEL_TRACES_SAMPLER_ARG=1.5"}, wantErr: `OTEL_TRACES_SAMPLER_ARG: "1.5" is not a ratio`},
		{name: "processor bounds", env: []string{
			"OTEL_BSP_MAX_QUEUE_SIZE=100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE=1000", "OTEL_BSP_SCHEDULE_DELAY=250", "OTEL_BSP_EXPORT_TIMEOUT=2000",
		}, want: with(func(e *OTelEnv) {
			e.MaxQueueSize, e.MaxExportBatchSize, e.ScheduleDelay, e.ExportTimeout = 100, 100, 250*time.Millisecond, 2*time.Second
		})},
		{name: "bound not positive", env: []string{"OTEL_BSP_MAX_QUEUE_SIZE=0"}, wantErr: `OTEL_BSP_MAX_QUEUE_SIZE: "0" is not a positive integer`},
		{name: "bound not a number", env: []string{"OTEL_BSP_SCHEDULE_DELAY=5s"}, wantErr: `OTEL_BSP_SCHEDULE_DELAY: "5s" is not a positive integer`},
		{name: "metric interval", metrics: true, env: []string{"OTEL_METRIC_EXPORT_INTERVAL=-1"}, wantErr: `OTEL_METRIC_EXPORT_INTERVAL: "-1" is not a positive integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &OpenTelemetry{Enabled: true, Metrics: tt.metrics}
			got, err := o.ReadOTelEnv(EnvironLookup(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ReadOTelEnv error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("ReadOTelEnv =\n%+v\nwant\n%+v", *got, tt.want)
			}
		})
	}
}

// TestResolveOTelEnv: serve and checkconfig resolve the configuration with
// the process's environment, so a protocol the exporters cannot speak is
// refused before anything starts, and only when tracing is on.
func TestResolveOTelEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{"opentelemetry": {"enabled": true, "metrics": true}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := []string{"OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}
	_, _, err := Resolve(Sources{File: path, Environ: bad})
	if err == nil || !strings.Contains(err.Error(), "http/json") {
		t.Errorf("Resolve = %v, want http/json refused", err)
	}
	_, _, err = Resolve(Sources{File: path, Environ: slices.Concat(bad, []string{"GYRE_OPENTELEMETRY_ENABLED=false"})})
	if err != nil {
		t.Errorf("with opentelemetry off: Resolve = %v", err)
	}
	_, _, err = Resolve(Sources{File: path, Environ: slices.Concat(bad, []string{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=grpc"})})
	if err != nil {
		t.Errorf("metrics over grpc, traces as http/json: Resolve = %v", err)
	}
}

func TestEnvironLookup(t *testing.T) {
	lookup := EnvironLookup([]string{"A=1", "B=", "A=2", "C"})
	for _, tt := range []struct {
		name, value string
		ok          bool
	}{{"A", "2", true}, {"B", "", true}, {"C", "", false}, {"D", "", false}} {
		if v, ok := lookup(tt.name); v != tt.value || ok != tt.ok {
			t.Errorf("lookup(%s) = %q, %v, want %q, %v", tt.name, v, ok, tt.value, tt.ok)
		}
	}
}
