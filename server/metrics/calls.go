package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// calls holds the instruments of the server API and of the proxies.
type calls struct {
	apiCalls      *prometheus.CounterVec
	apiTime       *prometheus.HistogramVec
	proxyTime     *prometheus.HistogramVec
	proxyErrors   *prometheus.CounterVec
	proxyInflight *prometheus.GaugeVec

	byAPICall children[apiCall, apiCounters]
}

type apiCall struct {
	protocol, method string
	code             uint32
}

type apiCounters struct {
	calls prometheus.Counter
	time  prometheus.Observer
}

func (c *calls) init(reg *prometheus.Registry) {
	c.apiCalls = counterVec("api", "calls_total", "Server API calls, by protocol (http or grpc), method and result (ok, or the error code). A batch of several commands is one call of method batch.", "protocol", "method", "result")
	c.apiTime = prometheus.NewHistogramVec(histOpts("api", "call_duration_seconds", "Duration of server API calls, by protocol and method.", apiBuckets), []string{"protocol", "method"})
	proxyLabels := []string{"protocol", "type", "name"}
	c.proxyTime = prometheus.NewHistogramVec(histOpts("proxy", "call_duration_seconds", "Duration of calls to the application backend, by protocol (http or grpc), type (connect, refresh, subscribe, publish, sub_refresh, rpc, subscribe_stream) and proxy name (default, or its name in proxies).", proxyBuckets), proxyLabels)
	c.proxyErrors = counterVec("proxy", "call_errors_total", "Calls to the application backend that failed on the way (unreachable, timed out, a bad status or response); a refusal the backend answers is no failure.", proxyLabels...)
	c.proxyInflight = gaugeVec("proxy", "calls_in_flight", "Calls to the application backend waiting for their answer.", proxyLabels...)
	reg.MustRegister(c.apiCalls, c.apiTime, c.proxyTime, c.proxyErrors, c.proxyInflight)
	c.byAPICall.make = func(k apiCall) apiCounters {
		result := "ok"
		if k.code != 0 {
			result = strconv.FormatUint(uint64(k.code), 10)
		}
		return apiCounters{c.apiCalls.WithLabelValues(k.protocol, k.method, result), c.apiTime.WithLabelValues(k.protocol, k.method)}
	}
}

// APICalls returns the function that records the server API calls of one
// protocol ("http", "grpc"): its method, its error code (0 for success)
// and how long it took; api.Config.OnCall takes it.
func (m *Metrics) APICalls(protocol string) func(method string, code uint32, d time.Duration) {
	return func(method string, code uint32, d time.Duration) {
		c := m.byAPICall.get(apiCall{protocol, method, code})
		c.calls.Inc()
		c.time.Observe(d.Seconds())
	}
}

// ProxyCalls records the calls of one proxy, reached over protocol ("http"
// or "grpc") and called name ("default", or its name in the proxies
// list); proxy.Config.Calls takes it.
type ProxyCalls struct {
	c              *calls
	protocol, name string
	byType         children[string, proxyCounters]
}

type proxyCounters struct {
	time     prometheus.Observer
	errors   prometheus.Counter
	inflight prometheus.Gauge
}

// ProxyCalls returns the recorder of one proxy's calls.
func (m *Metrics) ProxyCalls(protocol, name string) *ProxyCalls {
	p := &ProxyCalls{c: &m.calls, protocol: protocol, name: name}
	p.byType.make = func(typ string) proxyCounters {
		l := []string{protocol, typ, name}
		return proxyCounters{p.c.proxyTime.WithLabelValues(l...), p.c.proxyErrors.WithLabelValues(l...), p.c.proxyInflight.WithLabelValues(l...)}
	}
	return p
}

// CallStarted counts a call of type typ in flight.
func (p *ProxyCalls) CallStarted(typ string) { p.byType.get(typ).inflight.Inc() }

// CallDone measures a call of type typ that took d.
func (p *ProxyCalls) CallDone(typ string, d time.Duration) {
	c := p.byType.get(typ)
	c.inflight.Dec()
	c.time.Observe(d.Seconds())
}

// CallFailed counts a call of type typ that failed.
func (p *ProxyCalls) CallFailed(typ string) { p.byType.get(typ).errors.Inc() }
