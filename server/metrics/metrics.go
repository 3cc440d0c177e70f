// Package metrics exposes the server's Prometheus metrics: connections,
// subscriptions and channels of the node, client commands and the
// messages sent to clients, the node's traffic with its broker, API and
// proxy calls, broadcast latency, write batching, disconnects by code, and
// the progress of the consumers (Metrics.Consumers).
// docs/metrics.md lists every series.
//
// Every measurement is taken once, by the gyre_* instruments. With
// Options.Centrifugo the same measurements are also served under the names
// and labels of Centrifugo v6 (centrifugo_*), derived at each scrape from
// what the instruments hold (see centrifugo.go), so that dashboards and
// alerts made for Centrifugo read Gyre.
package metrics

import (
	"net/http"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/gyrehq/gyre"
)

const namespace = "gyre"

// Options configures the metrics.
type Options struct {
	// Version is the server's version, exported as gyre_build_info.
	Version string
	// Centrifugo also serves the series under Centrifugo v6's names and
	// labels.
	Centrifugo bool
	// RecoveredPublicationsHistogram serves, among the Centrifugo-named
	// series, centrifugo_client_recovered_publications, which Centrifugo
	// serves only when asked to (prometheus.recovered_publications_histogram).
	RecoveredPublicationsHistogram bool
}

// Metrics implements gyre.Observer and records the server's API and proxy
// calls. Create it with New, pass it as the node's Observer, then call
// Bind with the node.
type Metrics struct {
	// reg holds the gyre_* instruments, runtime the Go and process
	// collectors; compat, when set, derives the Centrifugo-named series
	// from what reg gathered.
	reg     *prometheus.Registry
	runtime *prometheus.Registry
	compat  *centrifugoView

	engine
	calls
	eventHooks   eventHooks
	httpRequests *prometheus.CounterVec
	httpTime     *prometheus.HistogramVec
}

var _ gyre.Observer = (*Metrics)(nil)

// New creates the metrics in registries of their own.
func New(opts Options) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), runtime: prometheus.NewRegistry()}
	m.engine.init(m.reg)
	m.calls.init(m.reg)
	m.eventHooks.init(m.reg)
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "http", Name: "requests_total",
		Help: "HTTP requests to instrumented handlers (prometheus.instrument_http_handlers), by handler, method and status code.",
	}, []string{"handler", "method", "code"})
	m.httpTime = prometheus.NewHistogramVec(histOpts("http", "request_duration_seconds", "Duration of HTTP requests to instrumented handlers, by handler and method; for streaming transports, the life of the stream.", prometheus.ExponentialBuckets(1e-4, 4, 10)), []string{"handler", "method"})
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help: "Always 1; the labels say which version of Gyre runs, built with which Go.",
	}, []string{"version", "go_version"})
	build.WithLabelValues(opts.Version, runtime.Version()).Set(1)
	m.reg.MustRegister(m.httpRequests, m.httpTime, build)
	m.runtime.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if opts.Centrifugo {
		m.compat = newCentrifugoView(time.Now, opts.RecoveredPublicationsHistogram)
	}
	return m
}

// Bind adds the gauges read from the node at scrape time.
func (m *Metrics) Bind(n *gyre.Node) {
	m.reg.MustRegister(&nodeCollector{n: n})
}

// Registerer takes further gyre_* series, served with the others (the
// OpenTelemetry span counters).
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// Gatherer gathers what Handler serves: the gyre_* series, the runtime's
// and, when on, the Centrifugo-named ones.
func (m *Metrics) Gatherer() prometheus.Gatherer { return prometheus.GathererFunc(m.gather) }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(prometheus.GathererFunc(m.gather), promhttp.HandlerOpts{})
}

// gather collects the gyre_* families once and serves them, the runtime's
// and, when on, the Centrifugo-named ones derived from that same
// gathering: both names of a measurement show the same value.
func (m *Metrics) gather() ([]*dto.MetricFamily, error) {
	own, err := m.reg.Gather()
	rt, rtErr := m.runtime.Gather()
	out := append(own, rt...)
	if m.compat != nil {
		out = append(out, m.compat.derive(own)...)
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	if err == nil {
		err = rtErr
	}
	return out, err
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

// nodeCollector reads the node's gauges once per scrape.
type nodeCollector struct{ n *gyre.Node }

var (
	nodeConnections   = nodeDesc("connections", "Connected clients on this node.")
	nodeUsers         = nodeDesc("users", "Distinct users connected to this node.")
	nodeChannels      = nodeDesc("channels", "Channels with subscribers on this node.")
	nodeSubscriptions = nodeDesc("subscriptions", "Subscriptions of the clients of this node.")
	clusterNodes      = prometheus.NewDesc(namespace+"_cluster_nodes",
		"Nodes of the cluster, this one included, as this node knows them: those that announced themselves through the broker recently.", nil, nil)
)

func nodeDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "node", name), help, nil, nil)
}

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeConnections, nodeUsers, nodeChannels, nodeSubscriptions, clusterNodes} {
		ch <- d
	}
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	nodes := c.n.Info()
	self := nodes[0]
	for _, g := range []struct {
		d *prometheus.Desc
		v int
	}{
		{nodeConnections, self.NumClients}, {nodeUsers, self.NumUsers}, {nodeChannels, self.NumChannels},
		{nodeSubscriptions, self.NumSubs}, {clusterNodes, len(nodes)},
	} {
		ch <- prometheus.MustNewConstMetric(g.d, prometheus.GaugeValue, float64(g.v))
	}
}
