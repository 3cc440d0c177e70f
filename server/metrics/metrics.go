// Package metrics exposes the server's Prometheus metrics: connections,
// subscriptions and channels of the node, messages received and sent by
// kind, API calls by method and result, broadcast latency, write batching
// and disconnects by code.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gyrehq/gyre"
)

const namespace = "gyre"

// Metrics implements gyre.Observer and records API calls. Create it with
// New, pass it as the node's Observer, then call Bind with the node.
type Metrics struct {
	reg *prometheus.Registry

	commands      *prometheus.CounterVec
	sent          *prometheus.CounterVec
	broadcastTime prometheus.Histogram
	frameMessages prometheus.Histogram
	frameBytes    prometheus.Histogram
	disconnects   *prometheus.CounterVec
	apiCalls      *prometheus.CounterVec
	apiTime       *prometheus.HistogramVec
	httpRequests  *prometheus.CounterVec
	httpTime      *prometheus.HistogramVec

	// Children of the vectors by label, so the hot path skips the label
	// hashing of WithLabelValues.
	commandByMethod sync.Map // string -> prometheus.Counter
	sentByKind      sync.Map // string -> prometheus.Counter
}

var _ gyre.Observer = (*Metrics)(nil)

// New creates the metrics in a registry of their own, with the Go runtime
// and process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.commands = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "client", Name: "commands_total",
		Help: "Commands received from clients, by method.",
	}, []string{"method"})
	m.sent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "client", Name: "messages_sent_total",
		Help: "Messages queued to clients, by kind (publication, join, leave, reply, push, ping).",
	}, []string{"kind"})
	m.broadcastTime = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "node", Name: "broadcast_duration_seconds",
		Help:    "Time to hand one publication to every local subscriber of its channel.",
		Buckets: prometheus.ExponentialBuckets(1e-6, 4, 12),
	})
	m.frameMessages = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "client", Name: "frame_messages",
		Help:    "Messages coalesced into one write to a connection (the queue drained at once).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12),
	})
	m.frameBytes = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "client", Name: "frame_bytes",
		Help:    "Bytes of one write to a connection.",
		Buckets: prometheus.ExponentialBuckets(64, 4, 10),
	})
	m.disconnects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "client", Name: "disconnects_total",
		Help: "Closed connections, by disconnect code.",
	}, []string{"code"})
	m.apiCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "api", Name: "calls_total",
		Help: "Server API calls, by method and result (ok, or the error code).",
	}, []string{"method", "result"})
	m.apiTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "api", Name: "call_duration_seconds",
		Help:    "Duration of server API calls, by method.",
		Buckets: prometheus.ExponentialBuckets(1e-5, 4, 10),
	}, []string{"method"})
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "http", Name: "requests_total",
		Help: "HTTP requests to instrumented handlers (prometheus.instrument_http_handlers), by handler, method and status code.",
	}, []string{"handler", "method", "code"})
	m.httpTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "http", Name: "request_duration_seconds",
		Help:    "Duration of HTTP requests to instrumented handlers, by handler and method; for streaming transports, the life of the stream.",
		Buckets: prometheus.ExponentialBuckets(1e-4, 4, 10),
	}, []string{"handler", "method"})
	m.reg.MustRegister(m.commands, m.sent, m.broadcastTime, m.frameMessages, m.frameBytes,
		m.disconnects, m.apiCalls, m.apiTime, m.httpRequests, m.httpTime,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Bind adds the gauges read from the node at scrape time.
func (m *Metrics) Bind(n *gyre.Node) {
	gauge := func(name, help string, fn func(gyre.NodeInfo) int) prometheus.GaugeFunc {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "node", Name: name, Help: help},
			func() float64 { return float64(fn(n.LocalInfo())) })
	}
	m.reg.MustRegister(
		gauge("connections", "Connected clients on this node.", func(i gyre.NodeInfo) int { return i.NumClients }),
		gauge("users", "Distinct users connected to this node.", func(i gyre.NodeInfo) int { return i.NumUsers }),
		gauge("channels", "Channels with subscribers on this node.", func(i gyre.NodeInfo) int { return i.NumChannels }),
		gauge("subscriptions", "Subscriptions of the clients of this node.", func(i gyre.NodeInfo) int { return i.NumSubs }),
	)
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// InstrumentHTTP wraps h so that its requests are counted and timed under
// the label handler. The wrapper keeps the writer's optional interfaces
// (http.Flusher, http.Hijacker), so streaming and WebSocket handlers work
// through it.
func (m *Metrics) InstrumentHTTP(handler string, h http.Handler) http.Handler {
	labels := prometheus.Labels{"handler": handler}
	return promhttp.InstrumentHandlerCounter(m.httpRequests.MustCurryWith(labels),
		promhttp.InstrumentHandlerDuration(m.httpTime.MustCurryWith(labels), h))
}

func child(cache *sync.Map, vec *prometheus.CounterVec, label string) prometheus.Counter {
	if c, ok := cache.Load(label); ok {
		return c.(prometheus.Counter)
	}
	c := vec.WithLabelValues(label)
	cache.Store(label, c)
	return c
}

// CommandReceived implements gyre.Observer.
func (m *Metrics) CommandReceived(method string) {
	child(&m.commandByMethod, m.commands, method).Inc()
}

// MessagesSent implements gyre.Observer.
func (m *Metrics) MessagesSent(kind string, n int) {
	if n > 0 {
		child(&m.sentByKind, m.sent, kind).Add(float64(n))
	}
}

// Broadcast implements gyre.Observer.
func (m *Metrics) Broadcast(_ int, d time.Duration) { m.broadcastTime.Observe(d.Seconds()) }

// FrameWritten implements gyre.Observer.
func (m *Metrics) FrameWritten(messages, bytes int) {
	m.frameMessages.Observe(float64(messages))
	m.frameBytes.Observe(float64(bytes))
}

// Disconnected implements gyre.Observer.
func (m *Metrics) Disconnected(code uint32) {
	m.disconnects.WithLabelValues(strconv.FormatUint(uint64(code), 10)).Inc()
}

// APICall records one server API call; code 0 means success.
func (m *Metrics) APICall(method string, code uint32, d time.Duration) {
	result := "ok"
	if code != 0 {
		result = strconv.FormatUint(uint64(code), 10)
	}
	m.apiCalls.WithLabelValues(method, result).Inc()
	m.apiTime.WithLabelValues(method).Observe(d.Seconds())
}
