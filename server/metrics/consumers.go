package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gyrehq/gyre/server/consume"
)

// Consumers adds the series of the node's consumers (config consumers),
// read from snapshots at each scrape: the consumers count in their own
// atomics (consume.Stats), so consuming pays nothing for the metrics.
// Call it once, before the metrics are served.
func (m *Metrics) Consumers(snapshots func() []consume.Snapshot) {
	m.reg.MustRegister(&consumerCollector{snapshots: snapshots})
}

var consumerLabels = []string{"consumer", "type"}

var (
	consumerMessages = prometheus.NewDesc(namespace+"_consumer_messages_total",
		"Messages a consumer took from its source, by outcome: processed (its command ran) or skipped (it can never run: malformed, unknown method, refused; acknowledged and logged).",
		[]string{"consumer", "type", "outcome"}, nil)
	consumerRetries = prometheus.NewDesc(namespace+"_consumer_retries_total",
		"Runs of a consumed command that failed for a reason that may pass (the broker down), each followed by a retry after a back-off.",
		consumerLabels, nil)
	consumerSourceErrors = prometheus.NewDesc(namespace+"_consumer_source_errors_total",
		"Failures of a consumer to read from or acknowledge to its source (connection lost, a poll or query that failed); the consumer reconnects by itself.",
		consumerLabels, nil)
	consumerLag = prometheus.NewDesc(namespace+"_consumer_lag",
		"Messages waiting in the consumer's source to be consumed, as the source last told; absent while the source cannot tell.",
		consumerLabels, nil)
	consumerUp = prometheus.NewDesc(namespace+"_consumer_up",
		"1 while the consumer runs and reaches its source, 0 otherwise.",
		consumerLabels, nil)
)

// consumerCollector reads the consumers' snapshots once per scrape.
type consumerCollector struct {
	snapshots func() []consume.Snapshot
}

func (c *consumerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{consumerMessages, consumerRetries, consumerSourceErrors, consumerLag, consumerUp} {
		ch <- d
	}
}

func (c *consumerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.snapshots() {
		ch <- prometheus.MustNewConstMetric(consumerMessages, prometheus.CounterValue, float64(s.Processed), s.Name, s.Type, "processed")
		ch <- prometheus.MustNewConstMetric(consumerMessages, prometheus.CounterValue, float64(s.Skipped), s.Name, s.Type, "skipped")
		ch <- prometheus.MustNewConstMetric(consumerRetries, prometheus.CounterValue, float64(s.Retries), s.Name, s.Type)
		ch <- prometheus.MustNewConstMetric(consumerSourceErrors, prometheus.CounterValue, float64(s.SourceErrors), s.Name, s.Type)
		// An unknown lag is left out rather than served as -1 or NaN: an
		// alert on the lag then neither fires nor averages on it.
		if s.Lag >= 0 {
			ch <- prometheus.MustNewConstMetric(consumerLag, prometheus.GaugeValue, float64(s.Lag), s.Name, s.Type)
		}
		up := 0.0
		if s.Running && s.Connected {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(consumerUp, prometheus.GaugeValue, up, s.Name, s.Type)
	}
}
