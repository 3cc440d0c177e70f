package metrics_test

import (
	"context"
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
		t.Fatalf("status %d", rec.Code)
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

func TestObserver(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	newNode(t, m)
	for range 3 {
		m.CommandReceived("publish")
	}
	m.CommandReceived("subscribe")
	m.MessagesSent("publication", 5)
	m.MessagesSent("publication", 2)
	m.MessagesSent("join", 0)
	m.Broadcast(10, 3*time.Millisecond)
	m.FrameWritten(4, 300)
	m.Disconnected(3001)
	m.Disconnected(3001)
	m.Disconnected(3503)
	m.APICall("publish", 0, time.Millisecond)
	m.APICall("publish", 0, time.Millisecond)
	m.APICall("publish", 102, time.Millisecond)

	got := scrape(t, m)
	tests := []struct {
		series string
		want   float64
	}{
		{`gyre_client_commands_total{method="publish"}`, 3},
		{`gyre_client_commands_total{method="subscribe"}`, 1},
		{`gyre_client_messages_sent_total{kind="publication"}`, 7},
		{`gyre_node_broadcast_duration_seconds_count`, 1},
		{`gyre_client_frame_messages_count`, 1},
		{`gyre_client_frame_messages_sum`, 4},
		{`gyre_client_frame_bytes_sum`, 300},
		{`gyre_client_disconnects_total{code="3001"}`, 2},
		{`gyre_client_disconnects_total{code="3503"}`, 1},
		{`gyre_api_calls_total{method="publish",result="ok"}`, 2},
		{`gyre_api_calls_total{method="publish",result="102"}`, 1},
		{`gyre_api_call_duration_seconds_count{method="publish"}`, 3},
		{`gyre_node_connections`, 0},
		{`gyre_node_users`, 0},
		{`gyre_node_channels`, 0},
		{`gyre_node_subscriptions`, 0},
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
	// A kind with nothing sent gets no series.
	if _, ok := got[`gyre_client_messages_sent_total{kind="join"}`]; ok {
		t.Fatal("a zero count created a series")
	}
	if _, ok := got["go_goroutines"]; !ok {
		t.Fatal("no Go runtime metrics")
	}
	if _, ok := got["process_resident_memory_bytes"]; !ok {
		t.Fatal("no process metrics")
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	newNode(t, m)
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			kind := "k" + strconv.Itoa(w%2)
			for range each {
				m.CommandReceived(kind)
				m.MessagesSent(kind, 1)
			}
		})
	}
	wg.Wait()
	got := scrape(t, m)
	for _, k := range []string{"k0", "k1"} {
		if v := got[`gyre_client_commands_total{method="`+k+`"}`]; v != workers/2*each {
			t.Fatalf("commands %s = %v, want %d", k, v, workers/2*each)
		}
		if v := got[`gyre_client_messages_sent_total{kind="`+k+`"}`]; v != workers/2*each {
			t.Fatalf("sent %s = %v, want %d", k, v, workers/2*each)
		}
	}
}

// The hot-path observer calls must not allocate once a label is known.
func TestHotPathAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	m := metrics.New()
	m.CommandReceived("publish")
	m.MessagesSent("publication", 1)
	tests := []struct {
		name string
		fn   func()
	}{
		{"CommandReceived", func() { m.CommandReceived("publish") }},
		{"MessagesSent", func() { m.MessagesSent("publication", 3) }},
		{"Broadcast", func() { m.Broadcast(100, time.Microsecond) }},
		{"FrameWritten", func() { m.FrameWritten(3, 512) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(1000, tt.fn); n != 0 {
				t.Fatalf("%v allocations per call, want 0", n)
			}
		})
	}
}

func BenchmarkObserver(b *testing.B) {
	m := metrics.New()
	b.Run("CommandReceived", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.CommandReceived("publish")
		}
	})
	b.Run("MessagesSent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.MessagesSent("publication", 1)
		}
	})
	b.Run("FrameWritten", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.FrameWritten(3, 512)
		}
	})
	b.Run("APICall", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.APICall("publish", 0, time.Millisecond)
		}
	})
}
