package metrics_test

import (
	"context"
	"math"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/metrics"
)

// scrape reads the metrics page into series ("name{labels}") and values.
func scrape(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func newNode(t *testing.T, m *metrics.Metrics) *gyre.Node {
	t.Helper()
	n, err := gyre.NewNode(gyre.Config{Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	m.Bind(n)
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	return n
}

// The observer's measurements reach both names of each series, with the
// labels each name has.
func TestObserver(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{Version: "1.2.3", Centrifugo: true})
	newNode(t, m)
	ws := gyre.ConnInfo{Transport: "websocket", Client: "js", Versioned: true}
	sse := gyre.ConnInfo{Transport: "sse", Client: "unnamed"}
	m.Connected(ws)
	m.Connected(ws)
	m.Connected(sse)
	m.Disconnected(ws, 3001, true)
	m.Disconnected(sse, 3000, true)
	m.Disconnected(gyre.ConnInfo{Transport: "sse", Client: "unnamed"}, 3501, false)
	for range 3 {
		m.CommandReceived("websocket", "publish", 40)
	}
	m.CommandReceived("websocket", "pong", 2)
	m.CommandDone("publish", 3*time.Millisecond)
	m.CommandFailed("publish", 103)
	m.MessagesSent("websocket", "push_publication", 5, 500)
	m.MessagesSent("websocket", "push_publication", 2, 200)
	m.MessagesSent("websocket", "push_join", 0, 0)
	m.Broadcast(10, 3*time.Millisecond)
	m.PublicationsFiltered(4)
	m.FrameWritten(4, 300)
	m.Subscribed(ws)
	m.Subscribed(ws)
	m.Unsubscribed(ws, 2000, true)
	m.Recovered(true, 3)
	m.Recovered(false, 0)
	m.BrokerSent("publication", 2)
	m.BrokerReceived("publication", 2)
	m.BrokerFailed("history")
	api := m.APICalls("http")
	api("publish", 0, time.Millisecond)
	api("publish", 0, time.Millisecond)
	api("publish", 102, time.Millisecond)
	m.APICalls("grpc")("info", 0, time.Millisecond)
	proxy := m.ProxyCalls("grpc", "default")
	proxy.CallStarted("subscribe")
	proxy.CallDone("subscribe", 20*time.Millisecond)
	proxy.CallFailed("subscribe")
	proxy.CallStarted("rpc")

	got := scrape(t, m)
	tests := []struct {
		series string
		want   float64
	}{
		{`gyre_client_connections{client_name="js",client_version="unregistered",transport="websocket"}`, 1},
		{`gyre_client_connections{client_name="unnamed",client_version="unversioned",transport="sse"}`, 0},
		{`gyre_client_connections_accepted_total{client_name="js",client_version="unregistered",transport="websocket"}`, 2},
		{`centrifugo_client_connections_inflight{accept_protocol="",client_name="js",client_version="unregistered",transport="websocket"}`, 1},
		{`centrifugo_client_connections_accepted{accept_protocol="",client_name="unnamed",client_version="unversioned",transport="sse"}`, 1},
		{`gyre_client_disconnects_total{code="3000"}`, 1},
		{`gyre_client_disconnects_total{code="3501"}`, 1},
		{`centrifugo_client_num_server_disconnects{code="3001"}`, 1},
		{`centrifugo_client_num_server_disconnects{code="3501"}`, 1},
		{`gyre_client_commands_total{method="publish",transport="websocket"}`, 3},
		{`gyre_client_command_bytes_total{method="publish",transport="websocket"}`, 120},
		{`centrifugo_transport_messages_received{channel_namespace="",frame_type="publish",transport="websocket"}`, 3},
		{`centrifugo_transport_messages_received{channel_namespace="",frame_type="client_pong",transport="websocket"}`, 1},
		{`centrifugo_transport_messages_received_size{channel_namespace="",frame_type="publish",transport="websocket"}`, 120},
		{`gyre_client_command_duration_seconds_count{method="publish"}`, 1},
		{`gyre_client_command_duration_seconds_bucket{method="publish",le="0.0025"}`, 0},
		{`gyre_client_command_duration_seconds_bucket{method="publish",le="0.005"}`, 1},
		{`centrifugo_client_command_duration_seconds_histogram_bucket{channel_namespace="",method="publish",le="0.001"}`, 0},
		{`centrifugo_client_command_duration_seconds_histogram_bucket{channel_namespace="",method="publish",le="0.005"}`, 1},
		{`centrifugo_client_command_duration_seconds_count{channel_namespace="",method="publish"}`, 1},
		{`gyre_client_command_errors_total{code="103",method="publish"}`, 1},
		{`centrifugo_client_num_reply_errors{channel_namespace="",code="103",method="publish"}`, 1},
		{`gyre_client_messages_sent_total{frame_type="push_publication",transport="websocket"}`, 7},
		{`gyre_client_messages_sent_bytes_total{frame_type="push_publication",transport="websocket"}`, 700},
		{`centrifugo_transport_messages_sent{channel_namespace="",frame_type="push_publication",transport="websocket"}`, 7},
		{`centrifugo_transport_messages_sent_size{channel_namespace="",frame_type="push_publication",transport="websocket"}`, 700},
		{`gyre_node_broadcast_duration_seconds_count`, 1},
		{`centrifugo_node_broadcast_duration_seconds_count{channel_namespace="",type="publication"}`, 1},
		{`gyre_node_publications_filtered_total`, 4},
		{`centrifugo_node_tags_filter_dropped_publications{channel_namespace=""}`, 4},
		{`gyre_client_frame_messages_count`, 1},
		{`gyre_client_frame_messages_sum`, 4},
		{`gyre_client_frame_bytes_sum`, 300},
		{`gyre_client_subscriptions{client_name="js"}`, 1},
		{`gyre_client_subscriptions_accepted_total{client_name="js"}`, 2},
		{`centrifugo_client_subscriptions_inflight{channel_namespace="",client_name="js"}`, 1},
		{`gyre_client_server_unsubscribes_total{code="2000"}`, 1},
		{`centrifugo_client_num_server_unsubscribes{channel_namespace="",code="2000"}`, 1},
		{`gyre_client_recoveries_total{has_recovered_publications="yes",recovered="yes"}`, 1},
		{`gyre_client_recoveries_total{has_recovered_publications="no",recovered="no"}`, 1},
		{`centrifugo_client_recover{channel_namespace="",has_recovered_publications="yes",recovered="yes"}`, 1},
		{`gyre_client_recovered_publications_sum`, 3},
		{`gyre_broker_messages_sent_total{type="publication"}`, 2},
		{`gyre_broker_messages_sent_total{type="join"}`, 0},
		{`centrifugo_node_messages_sent_count{channel_namespace="",type="publication"}`, 2},
		{`centrifugo_node_messages_received_count{channel_namespace="",type="publication"}`, 2},
		{`gyre_broker_errors_total{op="history"}`, 1},
		{`gyre_api_calls_total{method="publish",protocol="http",result="ok"}`, 2},
		{`gyre_api_calls_total{method="publish",protocol="http",result="102"}`, 1},
		{`gyre_api_call_duration_seconds_count{method="publish",protocol="http"}`, 3},
		{`centrifugo_api_command_errors_total{error="102",method="publish",protocol="http"}`, 1},
		{`centrifugo_api_command_duration_seconds_count{method="info",protocol="grpc"}`, 1},
		{`centrifugo_api_command_duration_seconds_histogram_count{method="publish",protocol="http"}`, 3},
		{`gyre_proxy_call_duration_seconds_count{name="default",protocol="grpc",type="subscribe"}`, 1},
		{`gyre_proxy_call_errors_total{name="default",protocol="grpc",type="subscribe"}`, 1},
		{`gyre_proxy_calls_in_flight{name="default",protocol="grpc",type="rpc"}`, 1},
		{`centrifugo_proxy_errors{name="default",protocol="grpc",type="subscribe"}`, 1},
		{`centrifugo_proxy_inflight_requests{name="default",protocol="grpc",type="rpc"}`, 1},
		{`centrifugo_proxy_duration_seconds_histogram_count{name="default",protocol="grpc",type="subscribe"}`, 1},
		{`gyre_node_connections`, 0},
		{`centrifugo_node_num_clients`, 0},
		{`gyre_cluster_nodes`, 1},
		{`centrifugo_node_num_nodes`, 1},
		{`centrifugo_node_build{version="1.2.3"}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.series, func(t *testing.T) {
			v, ok := got[tt.series]
			if !ok {
				t.Fatalf("no series %s", tt.series)
			}
			if v != tt.want {
				t.Fatalf("%s = %v, want %v", tt.series, v, tt.want)
			}
		})
	}
	// A kind with nothing sent gets no series; nor do Centrifugo's
	// server disconnects the client's own close.
	for _, s := range []string{
		`gyre_client_messages_sent_total{frame_type="push_join",transport="websocket"}`,
		`centrifugo_client_num_server_disconnects{code="3000"}`,
		`centrifugo_api_command_errors_total{error="ok",method="publish",protocol="http"}`,
	} {
		if _, ok := got[s]; ok {
			t.Errorf("unexpected series %s", s)
		}
	}
	// One summary observation of 3ms: every quantile falls in the bucket
	// (2.5ms, 5ms].
	for _, q := range []string{"0.5", "0.99", "0.999"} {
		v := got[`centrifugo_client_command_duration_seconds{channel_namespace="",method="publish",quantile="`+q+`"}`]
		if v <= 0.0025 || v > 0.005 {
			t.Errorf("quantile %s = %v, want in (0.0025, 0.005]", q, v)
		}
	}
	for _, s := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := got[s]; !ok {
			t.Errorf("no series %s", s)
		}
	}
}

// Without Options.Centrifugo only the gyre_* series (and the runtime's)
// are served.
func TestCentrifugoOff(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{})
	newNode(t, m)
	m.CommandReceived("websocket", "publish", 10)
	for s := range scrape(t, m) {
		if strings.HasPrefix(s, "centrifugo_") {
			t.Fatalf("series %s served with Centrifugo off", s)
		}
	}
}

// centrifugo_client_recovered_publications is served only when asked for
// (prometheus.recovered_publications_histogram), as Centrifugo serves it;
// gyre_client_recovered_publications always is.
func TestRecoveredPublicationsHistogram(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{false, true} {
		m := metrics.New(metrics.Options{Centrifugo: true, RecoveredPublicationsHistogram: on})
		newNode(t, m)
		m.Recovered(true, 3)
		got := scrape(t, m)
		if got["gyre_client_recovered_publications_sum"] != 3 {
			t.Errorf("on=%v: gyre_client_recovered_publications_sum = %v, want 3", on, got["gyre_client_recovered_publications_sum"])
		}
		sum, served := got[`centrifugo_client_recovered_publications_sum{channel_namespace=""}`]
		if served != on || (on && sum != 3) {
			t.Errorf("on=%v: centrifugo_client_recovered_publications_sum served=%v value=%v", on, served, sum)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{Centrifugo: true})
	newNode(t, m)
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			kind := "k" + strconv.Itoa(w%2)
			for range each {
				m.CommandReceived("websocket", kind, 1)
				m.MessagesSent("websocket", kind, 1, 10)
				m.CommandDone(kind, time.Millisecond)
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			scrape(t, m)
		}
	})
	wg.Wait()
	got := scrape(t, m)
	for _, k := range []string{"k0", "k1"} {
		if v := got[`gyre_client_commands_total{method="`+k+`",transport="websocket"}`]; v != workers/2*each {
			t.Fatalf("commands %s = %v, want %d", k, v, workers/2*each)
		}
		if v := got[`centrifugo_transport_messages_sent{channel_namespace="",frame_type="`+k+`",transport="websocket"}`]; v != workers/2*each {
			t.Fatalf("sent %s = %v, want %d", k, v, workers/2*each)
		}
	}
}

// observerCalls are the calls of the engine's hot paths, and an API call.
func observerCalls(m *metrics.Metrics) []struct {
	name string
	fn   func()
} {
	api := m.APICalls("http")
	return []struct {
		name string
		fn   func()
	}{
		{"CommandReceived", func() { m.CommandReceived("websocket", "publish", 20) }},
		{"CommandDone", func() { m.CommandDone("publish", time.Millisecond) }},
		{"MessagesSent", func() { m.MessagesSent("websocket", "push_publication", 3, 300) }},
		{"Broadcast", func() { m.Broadcast(100, time.Microsecond) }},
		{"PublicationsFiltered", func() { m.PublicationsFiltered(2) }},
		{"FrameWritten", func() { m.FrameWritten(3, 512) }},
		{"BrokerReceived", func() { m.BrokerReceived("publication", 3) }},
		{"BrokerSent", func() { m.BrokerSent("publication", 3) }},
		{"APICall", func() { api("publish", 0, time.Millisecond) }},
	}
}

// The observer calls must not allocate once a label is known.
func TestHotPathAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, tt := range observerCalls(metrics.New(metrics.Options{Centrifugo: true})) {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn()
			if n := testing.AllocsPerRun(1000, tt.fn); n != 0 {
				t.Fatalf("%v allocations per call, want 0", n)
			}
		})
	}
}

// The Centrifugo summaries' quantiles cover what was observed in the
// last 10 minutes, as a Prometheus summary's.
func TestSummaryWindow(t *testing.T) {
	t.Parallel()
	clock := time.Unix(1_000_000, 0)
	m := metrics.NewWithClock(metrics.Options{Centrifugo: true}, func() time.Time { return clock })
	quantile := func() float64 {
		return scrape(t, m)[`centrifugo_api_command_duration_seconds{method="publish",protocol="http",quantile="0.5"}`]
	}
	api := m.APICalls("http")
	for range 100 {
		api("publish", 0, 300*time.Microsecond)
	}
	if q := quantile(); q <= 0.00025 || q > 0.0005 {
		t.Fatalf("median %v, want in (0.00025, 0.0005]", q)
	}
	// Scrapes every minute; from minute 3 on, calls take 30ms.
	for minute := 1; minute <= 14; minute++ {
		clock = clock.Add(time.Minute)
		if minute >= 3 {
			for range 10 {
				api("publish", 0, 30*time.Millisecond)
			}
		}
		q := quantile()
		switch {
		case minute < 5 && q > 0.0005:
			t.Fatalf("minute %d: median %v, want the fast calls' (<= 0.0005)", minute, q)
		case minute >= 13 && (q <= 0.025 || q > 0.05):
			t.Fatalf("minute %d: median %v, want the slow calls' (0.025, 0.05]: the fast ones left the window", minute, q)
		}
	}
	// Nothing observed for a whole window: no quantile.
	for range 12 {
		clock = clock.Add(time.Minute)
		quantile()
	}
	if q := quantile(); !math.IsNaN(q) {
		t.Fatalf("median %v after an idle window, want NaN", q)
	}
}

func BenchmarkObserver(b *testing.B) {
	for _, bm := range observerCalls(metrics.New(metrics.Options{Centrifugo: true})) {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bm.fn()
			}
		})
	}
}

// BenchmarkScrape measures serving the metrics page, with and without
// the Centrifugo names.
func BenchmarkScrape(b *testing.B) {
	for _, centrifugo := range []bool{false, true} {
		b.Run("centrifugo="+strconv.FormatBool(centrifugo), func(b *testing.B) {
			m := metrics.New(metrics.Options{Centrifugo: centrifugo})
			for _, method := range []string{"connect", "subscribe", "publish", "presence", "history", "rpc"} {
				m.CommandReceived("websocket", method, 30)
				m.CommandDone(method, time.Millisecond)
				m.APICalls("http")(method, 0, time.Millisecond)
			}
			h := m.Handler()
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/metrics", nil))
			}
		})
	}
}
