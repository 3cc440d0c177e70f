package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gyrehq/gyre"
)

// engine holds the instruments the engine feeds through gyre.Observer.
type engine struct {
	connections   *prometheus.GaugeVec
	accepted      *prometheus.CounterVec
	disconnects   *prometheus.CounterVec
	subscriptions *prometheus.GaugeVec
	subsAccepted  *prometheus.CounterVec
	serverUnsubs  *prometheus.CounterVec
	commands      *prometheus.CounterVec
	commandBytes  *prometheus.CounterVec
	commandTime   *prometheus.HistogramVec
	commandErrors *prometheus.CounterVec
	sent          *prometheus.CounterVec
	sentBytes     *prometheus.CounterVec
	broadcastTime prometheus.Histogram
	filtered      prometheus.Counter
	frameMessages prometheus.Histogram
	frameBytes    prometheus.Histogram
	recoveries    [2][2]prometheus.Counter // [recovered][had publications]
	recoveredPubs prometheus.Histogram
	brokerSent    *prometheus.CounterVec
	brokerRecv    *prometheus.CounterVec
	brokerErrors  *prometheus.CounterVec
	redisErrors   *prometheus.CounterVec
	behind        prometheus.Gauge
	behindTotal   prometheus.Counter
	held          [2]prometheus.Counter // [refused]
	holdTime      prometheus.Histogram
	subsLost      [2]prometheus.Counter // told, at most once

	// Children of the vectors by label values, so that hot paths skip the
	// label hashing of WithLabelValues.
	byConn        children[gyre.ConnInfo, connCounters]
	byClient      children[string, connCounters]
	byCommand     children[labelPair, countAndBytes]
	byMessage     children[labelPair, countAndBytes]
	byMethod      children[string, prometheus.Observer]
	byError       children[methodCode, prometheus.Counter]
	byCode        children[uint32, prometheus.Counter]
	byUnsubscribe children[uint32, prometheus.Counter]
	byBrokerSent  children[string, prometheus.Counter]
	byBrokerRecv  children[string, prometheus.Counter]
	byBrokerError children[string, prometheus.Counter]
}

// labelPair is a transport and a method or frame type.
type labelPair struct{ transport, kind string }

type methodCode struct {
	method string
	code   uint32
}

type countAndBytes struct{ count, bytes prometheus.Counter }

// connCounters count connections or subscriptions: those accepted, and
// those open now.
type connCounters struct {
	accepted prometheus.Counter
	open     prometheus.Gauge
}

// Label values of the engine's series that come from small fixed sets.
var (
	brokerKinds = []string{"publication", "join", "leave", "control"}
	brokerOps   = []string{"publish", "subscribe", "unsubscribe", "history", "presence"}
	// redisPubSubErrors are the kinds of redis.Config.OnPubSubError.
	redisPubSubErrors = []string{"connection", "subscribe_channel", "subscribe_shard_channel", "handle_client_message", "handle_control_message"}
)

func (e *engine) init(reg *prometheus.Registry) {
	connLabels := []string{"transport", "client_name", "client_version"}
	e.connections = gaugeVec("client", "connections", "Connected clients, by transport and SDK (client_name: js, go, python, dart, swift, java, unregistered for another name, unnamed for none; client_version: unversioned, or unregistered when the client gave one).", connLabels...)
	e.accepted = counterVec("client", "connections_accepted_total", "Connections accepted (their connect succeeded), by transport and SDK.", connLabels...)
	e.disconnects = counterVec("client", "disconnects_total", "Closed connections, by disconnect code (3000: the client went away).", "code")
	e.subscriptions = gaugeVec("client", "subscriptions", "Subscriptions of the connected clients, by SDK.", "client_name")
	e.subsAccepted = counterVec("client", "subscriptions_accepted_total", "Subscriptions started, by SDK.", "client_name")
	e.serverUnsubs = counterVec("client", "server_unsubscribes_total", "Subscriptions the server ended, telling the client with an unsubscribe push, by code.", "code")
	e.commands = counterVec("client", "commands_total", "Commands received from clients, by transport and method (pong: the empty command answering a server ping).", "transport", "method")
	e.commandBytes = counterVec("client", "command_bytes_total", "Bytes of the commands received from clients (each its share of its frame), by transport and method.", "transport", "method")
	e.commandTime = prometheus.NewHistogramVec(histOpts("client", "command_duration_seconds", "Time from a command's arrival until its reply was queued, by method; pongs are not measured.", commandBuckets), []string{"method"})
	e.commandErrors = counterVec("client", "command_errors_total", "Commands answered with an error, by method and error code.", "method", "code")
	e.sent = counterVec("client", "messages_sent_total", "Messages queued to clients, by transport and frame type (push_publication, push_join, push_leave, ..., server_ping, or the method a reply answers).", "transport", "frame_type")
	e.sentBytes = counterVec("client", "messages_sent_bytes_total", "Bytes of the messages queued to clients (compressed where the connection negotiated compression), by transport and frame type.", "transport", "frame_type")
	e.broadcastTime = prometheus.NewHistogram(histOpts("node", "broadcast_duration_seconds", "Time to hand one publication to every local subscriber of its channel.", broadcastBuckets))
	e.filtered = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "node", Name: "publications_filtered_total",
		Help: "Publications a subscriber's tag filter kept from it, once per subscriber.",
	})
	e.frameMessages = prometheus.NewHistogram(histOpts("client", "frame_messages", "Messages coalesced into one write to a connection (the queue drained at once).", prometheus.ExponentialBuckets(1, 2, 12)))
	e.frameBytes = prometheus.NewHistogram(histOpts("client", "frame_bytes", "Bytes of one write to a connection.", prometheus.ExponentialBuckets(64, 4, 10)))
	recoveries := counterVec("client", "recoveries_total", "Subscriptions that asked to recover what they missed, by outcome (recovered: yes or no) and whether they were given publications.", "recovered", "has_recovered_publications")
	for i, rec := range []string{"no", "yes"} {
		for j, had := range []string{"no", "yes"} {
			e.recoveries[i][j] = recoveries.WithLabelValues(rec, had)
		}
	}
	e.recoveredPubs = prometheus.NewHistogram(histOpts("client", "recovered_publications", "Publications given to a subscription that recovered.", recoveredBuckets))
	e.brokerSent = counterVec("broker", "messages_sent_total", "Messages the node handed to its broker, by type (publication, join, leave, control).", "type")
	e.brokerRecv = counterVec("broker", "messages_received_total", "Messages the broker delivered to the node, by type (publication, join, leave, control).", "type")
	e.brokerErrors = counterVec("broker", "errors_total", "Broker operations that failed, by operation (publish, subscribe, unsubscribe, history, presence).", "op")
	e.redisErrors = counterVec("redis", "pubsub_errors_total", "Failures of the Redis engine's pub/sub side, by kind (connection, subscribe_channel, subscribe_shard_channel, handle_client_message, handle_control_message); present with the Redis engine.", "error")
	e.behind = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "broker", Name: "behind",
		Help: "1 while this node's broker delivery is behind (a pub/sub queue has not emptied for 250 ms, holds more than 500 ms of work or is nearly full, or a probe through Redis takes longer than 250 ms) and the cluster holds publishes back, else 0."})
	e.behindTotal = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Subsystem: "broker", Name: "behind_episodes_total",
		Help: "Times this node's broker delivery fell behind."})
	held := counterVec("node", "publishes_held_total", "Publishes (of up to 256 items) held back while a node of the cluster was behind, by outcome: admitted once it caught up, or refused with 111 (too many requests) after the hold timeout.", "outcome")
	e.held = [2]prometheus.Counter{held.WithLabelValues("admitted"), held.WithLabelValues("refused")}
	e.holdTime = prometheus.NewHistogram(histOpts("node", "publish_hold_duration_seconds", "How long a held publish waited.", prometheus.ExponentialBuckets(0.001, 4, 8)))
	lost := counterVec("broker", "subscribers_lost_total", "Subscribers of channels whose broker subscription was interrupted (publications may have been missed), by delivery: told (unsubscribed with 2500 to recover, or disconnected with 3010) or at_most_once (channels without history, not told).", "delivery")
	e.subsLost = [2]prometheus.Counter{lost.WithLabelValues("told"), lost.WithLabelValues("at_most_once")}
	for _, k := range brokerKinds {
		e.brokerSent.WithLabelValues(k)
		e.brokerRecv.WithLabelValues(k)
	}
	for _, op := range brokerOps {
		e.brokerErrors.WithLabelValues(op)
	}
	reg.MustRegister(e.connections, e.accepted, e.disconnects, e.subscriptions, e.subsAccepted, e.serverUnsubs,
		e.commands, e.commandBytes, e.commandTime, e.commandErrors, e.sent, e.sentBytes, e.broadcastTime,
		e.filtered, e.frameMessages, e.frameBytes, recoveries, e.recoveredPubs, e.brokerSent, e.brokerRecv,
		e.brokerErrors, e.redisErrors, e.behind, e.behindTotal, held, e.holdTime, lost)

	e.byConn.make = func(c gyre.ConnInfo) connCounters {
		l := []string{c.Transport, c.Client, clientVersion(c.Versioned)}
		return connCounters{e.accepted.WithLabelValues(l...), e.connections.WithLabelValues(l...)}
	}
	e.byClient.make = func(name string) connCounters {
		return connCounters{e.subsAccepted.WithLabelValues(name), e.subscriptions.WithLabelValues(name)}
	}
	e.byCommand.make = func(p labelPair) countAndBytes {
		return countAndBytes{e.commands.WithLabelValues(p.transport, p.kind), e.commandBytes.WithLabelValues(p.transport, p.kind)}
	}
	e.byMessage.make = func(p labelPair) countAndBytes {
		return countAndBytes{e.sent.WithLabelValues(p.transport, p.kind), e.sentBytes.WithLabelValues(p.transport, p.kind)}
	}
	e.byMethod.make = func(method string) prometheus.Observer { return e.commandTime.WithLabelValues(method) }
	e.byError.make = func(k methodCode) prometheus.Counter {
		return e.commandErrors.WithLabelValues(k.method, strconv.FormatUint(uint64(k.code), 10))
	}
	e.byCode.make = codeChild(e.disconnects)
	e.byUnsubscribe.make = codeChild(e.serverUnsubs)
	e.byBrokerSent.make = labelChild(e.brokerSent)
	e.byBrokerRecv.make = labelChild(e.brokerRecv)
	e.byBrokerError.make = labelChild(e.brokerErrors)
}

func histOpts(subsystem, name, help string, buckets []float64) prometheus.HistogramOpts {
	return prometheus.HistogramOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help, Buckets: buckets}
}

func counterVec(subsystem, name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}, labels)
}

func gaugeVec(subsystem, name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}, labels)
}

func codeChild(vec *prometheus.CounterVec) func(uint32) prometheus.Counter {
	return func(code uint32) prometheus.Counter { return vec.WithLabelValues(strconv.FormatUint(uint64(code), 10)) }
}

func labelChild(vec *prometheus.CounterVec) func(string) prometheus.Counter {
	return func(v string) prometheus.Counter { return vec.WithLabelValues(v) }
}

// clientVersion is the client_version label: versions are free text, so
// only whether the client gave one is told, in Centrifugo's words.
func clientVersion(given bool) string {
	if given {
		return "unregistered"
	}
	return "unversioned"
}

// children caches the children of a vector by key; make creates one.
type children[K comparable, V any] struct {
	m    sync.Map // K -> V
	make func(K) V
}

func (c *children[K, V]) get(k K) V {
	if v, ok := c.m.Load(k); ok {
		return v.(V)
	}
	v, _ := c.m.LoadOrStore(k, c.make(k))
	return v.(V)
}

// Connected implements gyre.Observer.
func (e *engine) Connected(c gyre.ConnInfo) {
	cc := e.byConn.get(c)
	cc.accepted.Inc()
	cc.open.Inc()
}

// Disconnected implements gyre.Observer.
func (e *engine) Disconnected(c gyre.ConnInfo, code uint32, connected bool) {
	e.byCode.get(code).Inc()
	if connected {
		e.byConn.get(c).open.Dec()
	}
}

// CommandReceived implements gyre.Observer.
func (e *engine) CommandReceived(transport, method string, size int) {
	cb := e.byCommand.get(labelPair{transport, method})
	cb.count.Inc()
	cb.bytes.Add(float64(size))
}

// CommandDone implements gyre.Observer.
func (e *engine) CommandDone(method string, d time.Duration) {
	e.byMethod.get(method).Observe(d.Seconds())
}

// CommandFailed implements gyre.Observer.
func (e *engine) CommandFailed(method string, code uint32) {
	e.byError.get(methodCode{method, code}).Inc()
}

// MessagesSent implements gyre.Observer.
func (e *engine) MessagesSent(transport, kind string, n, size int) {
	if n <= 0 {
		return
	}
	cb := e.byMessage.get(labelPair{transport, kind})
	cb.count.Add(float64(n))
	cb.bytes.Add(float64(size))
}

// Broadcast implements gyre.Observer.
func (e *engine) Broadcast(_ int, d time.Duration) { e.broadcastTime.Observe(d.Seconds()) }

// PublicationsFiltered implements gyre.Observer.
func (e *engine) PublicationsFiltered(n int) { e.filtered.Add(float64(n)) }

// FrameWritten implements gyre.Observer.
func (e *engine) FrameWritten(messages, bytes int) {
	e.frameMessages.Observe(float64(messages))
	e.frameBytes.Observe(float64(bytes))
}

// Subscribed implements gyre.Observer.
func (e *engine) Subscribed(c gyre.ConnInfo) {
	cc := e.byClient.get(c.Client)
	cc.accepted.Inc()
	cc.open.Inc()
}

// Unsubscribed implements gyre.Observer.
func (e *engine) Unsubscribed(c gyre.ConnInfo, code uint32, server bool) {
	e.byClient.get(c.Client).open.Dec()
	if server {
		e.byUnsubscribe.get(code).Inc()
	}
}

// Recovered implements gyre.Observer.
func (e *engine) Recovered(recovered bool, publications int) {
	e.recoveries[b2i(recovered)][b2i(publications > 0)].Inc()
	if recovered {
		e.recoveredPubs.Observe(float64(publications))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// BrokerSent implements gyre.Observer.
func (e *engine) BrokerSent(kind string, n int) {
	if n > 0 {
		e.byBrokerSent.get(kind).Add(float64(n))
	}
}

// BrokerReceived implements gyre.Observer.
func (e *engine) BrokerReceived(kind string, n int) {
	if n > 0 {
		e.byBrokerRecv.get(kind).Add(float64(n))
	}
}

// BrokerFailed implements gyre.Observer.
func (e *engine) BrokerFailed(op string) { e.byBrokerError.get(op).Inc() }

// BrokerBehind implements gyre.Observer.
func (e *engine) BrokerBehind(behind bool) {
	if behind {
		e.behind.Set(1)
		e.behindTotal.Inc()
		return
	}
	e.behind.Set(0)
}

// PublishHeld implements gyre.Observer.
func (e *engine) PublishHeld(d time.Duration, refused bool) {
	i := 0
	if refused {
		i = 1
	}
	e.held[i].Inc()
	e.holdTime.Observe(d.Seconds())
}

// SubscriptionsLost implements gyre.Observer.
func (e *engine) SubscriptionsLost(told, atMostOnce int) {
	e.subsLost[0].Add(float64(told))
	e.subsLost[1].Add(float64(atMostOnce))
}

// RedisPubSubErrors returns the function for redis.Config.OnPubSubError.
// Calling it makes the error series present, at zero, for each kind.
func (m *Metrics) RedisPubSubErrors() func(kind string) {
	for _, k := range redisPubSubErrors {
		m.redisErrors.WithLabelValues(k)
	}
	return func(kind string) { m.redisErrors.WithLabelValues(kind).Inc() }
}
