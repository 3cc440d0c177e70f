package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// eventHooks holds the instruments of the event hooks: channel state and
// user status events on their way to the backend.
type eventHooks struct {
	events   *prometheus.CounterVec
	failures *prometheus.CounterVec
	requests *prometheus.HistogramVec
	queued   *prometheus.GaugeVec
	decided  *prometheus.CounterVec
}

func (h *eventHooks) init(reg *prometheus.Registry) {
	h.events = counterVec("event_hooks", "events_total", "Events handed to a hook proxy's queue, by proxy, kind (channel or user) and outcome: delivered (the backend took them), dropped_queue_full or dropped_max_age (the backend stayed down; also logged).", "proxy", "kind", "outcome")
	h.failures = counterVec("event_hooks", "request_failures_total", "Requests to a hook proxy that failed and are sent again, by proxy, kind and reason (timeout, transport, status, bad_reply, refused).", "proxy", "kind", "reason")
	h.requests = prometheus.NewHistogramVec(histOpts("event_hooks", "request_duration_seconds", "Duration of the requests that delivered a batch of events, by proxy and kind.", proxyBuckets), []string{"proxy", "kind"})
	h.queued = gaugeVec("event_hooks", "queue_length", "Events waiting in a hook proxy's queue, the request in flight included.", "proxy")
	h.decided = counterVec("event_hooks", "transitions_total", "Transitions this node handed to the hook proxies, by type (occupied, vacated, online, offline); every transition of the cluster is handed over by one node.", "type")
	reg.MustRegister(h.events, h.failures, h.requests, h.queued, h.decided)
}

// EventHookQueue records what one hook proxy's queue does; its methods
// take the kind of the events ("channel", "user").
type EventHookQueue struct {
	h     *eventHooks
	proxy string
}

// EventHookQueue returns the recorder of the queue of the proxy name.
func (m *Metrics) EventHookQueue(name string) *EventHookQueue {
	return &EventHookQueue{h: &m.eventHooks, proxy: name}
}

// Delivered counts a batch of n events of kind the backend took in d.
func (q *EventHookQueue) Delivered(kind string, n int, d time.Duration) {
	q.h.events.WithLabelValues(q.proxy, kind, "delivered").Add(float64(n))
	q.h.requests.WithLabelValues(q.proxy, kind).Observe(d.Seconds())
}

// Failed counts a request that failed for reason.
func (q *EventHookQueue) Failed(kind, reason string) {
	q.h.failures.WithLabelValues(q.proxy, kind, reason).Inc()
}

// Dropped counts n events dropped for reason (queue_full, max_age).
func (q *EventHookQueue) Dropped(kind, reason string, n int) {
	q.h.events.WithLabelValues(q.proxy, kind, "dropped_"+reason).Add(float64(n))
}

// QueueLength sets the events waiting.
func (q *EventHookQueue) QueueLength(n int) {
	q.h.queued.WithLabelValues(q.proxy).Set(float64(n))
}

// OccupancyDropped serves the transitions the occupancy tracker dropped
// because the hooks did not keep up, read from dropped at each scrape.
func (m *Metrics) OccupancyDropped(dropped func() uint64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "event_hooks", Name: "transitions_dropped_total",
		Help: "Transitions the occupancy tracker dropped, past its backlog, because the hook proxies did not take them in time (their backend was down); counted by the node that read them, logged once per episode.",
	}, func() float64 { return float64(dropped()) }))
}

// EventHookTransitions counts n transitions of typ handed to the proxies.
func (m *Metrics) EventHookTransitions(typ string, n int) {
	m.eventHooks.decided.WithLabelValues(typ).Add(float64(n))
}
