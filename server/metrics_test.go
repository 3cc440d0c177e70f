package server

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
)

// TestMetricsServed runs clients, API calls and a failing proxy against a
// real server, on each engine, and checks the metrics page against
// docs/metrics.md and deploy/grafana/gyre.json: every series the page
// documents is served with its documented type and labels; every
// Centrifugo series it lists as served carries Centrifugo's labels, moved
// with the traffic and agrees with the Gyre series it is read from; none
// it lists as not served is; and every series the dashboard reads exists.
func TestMetricsServed(t *testing.T) {
	doc := parseMetricsDoc(t)
	served := map[string]bool{}
	t.Run("memory", func(t *testing.T) {
		page := runMetricsTraffic(t, nil)
		checkMetricsDoc(t, doc, page, false)
		for name := range page.samples {
			served[name] = true
		}
	})
	t.Run("redis", func(t *testing.T) {
		// A server of its own rather than enginetest's shared ones:
		// failRedis stops it, and the page is read through the server's
		// config keys, not an engine handed to a node.
		redis := redistest.Start(t)
		page := runMetricsTraffic(t, redis)
		checkMetricsDoc(t, doc, page, true)
		for name := range page.samples {
			served[name] = true
		}
	})
	if t.Failed() {
		return
	}
	t.Run("dashboard", func(t *testing.T) {
		for _, name := range dashboardSeries(t) {
			if !served[name] {
				t.Errorf("deploy/grafana/gyre.json reads %s, which no scrape served", name)
			}
		}
	})
}

// metricsTestConfig: "chat" keeps history, announces joins and leaves and
// lets clients filter by tags; "proxied" asks a subscribe proxy, whose
// backend fails.
func metricsTestConfig(backend string) *config.Config {
	c := testConfig()
	c.Prometheus.Enabled = true
	c.Prometheus.InstrumentHTTPHandlers = true
	c.Prometheus.RecoveredPublicationsHistogram = true
	c.Channel.Proxy.Subscribe = config.Proxy{Endpoint: backend + "/subscribe", Timeout: 2 * time.Second}
	c.Channel.Namespaces = append(c.Channel.Namespaces,
		config.Namespace{Name: "chat", ChannelOptions: config.ChannelOptions{
			AllowSubscribeForClient: true, AllowPublishForSubscriber: true, AllowTagsFilter: true,
			HistorySize: 100, HistoryTTL: time.Minute, ForceRecovery: true,
			Presence: true, JoinLeave: true, ForcePushJoinLeave: true,
		}},
		config.Namespace{Name: "proxied", ChannelOptions: config.ChannelOptions{SubscribeProxyEnabled: true, SubscribeProxyName: "default"}},
	)
	return c
}

// runMetricsTraffic starts a server (on redis when set), drives traffic
// that moves every documented series, checks the values it knows, and
// returns the last scrape.
func runMetricsTraffic(t *testing.T, redis *redistest.Server) *metricsPage {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "backend down", http.StatusInternalServerError)
	}))
	t.Cleanup(backend.Close)
	// The state proxy's backend refuses its first request and takes the
	// rest: a failure, a retry and a delivery.
	var stateRequests atomic.Int32
	hookBackend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stateRequests.Add(1) == 1 {
			http.Error(w, "backend starting", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(hookBackend.Close)
	c := metricsTestConfig(backend.URL)
	c.Channel.Proxy.State = config.Proxy{Endpoint: hookBackend.URL, Timeout: 2 * time.Second}
	c.Channel.Namespaces = append(c.Channel.Namespaces,
		config.Namespace{Name: "hooked", ChannelOptions: config.ChannelOptions{AllowSubscribeForClient: true, StateProxyEnabled: true, StateProxyName: "default"}})
	if redis != nil {
		c.Engine.Type = "redis"
		c.Engine.Redis.Address = []string{redis.Addr}
		c.Engine.Redis.Prefix = "metrics"
	}
	s, base := newServer(t, c)
	feed := startTestConsumers(t, s, "feed:kafka")[0]
	url := "ws" + strings.TrimPrefix(base, "http") + "/connection/websocket"
	dialAs := func(user, name, version string) *wstest.Client {
		cl := wstest.Dial(t, url, protocol.TypeJSON)
		rep := cl.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: signToken(t, testSecret, user), Name: name, Version: version}})
		if rep.Error != nil {
			t.Fatalf("connect %s: error %d", user, rep.Error.Code)
		}
		return cl
	}
	api := func(method, body string) (int, string) { return post(t, base+"/api/"+method, body) }

	// a takes everything; b filters by tag; three publications come from
	// the API (one tagged away from b), one from a.
	a := dialAs("alice", "js", "5.0")
	b := dialAs("bob", "some-sdk", "")
	first := a.MustSubscribe("chat:room")
	if r := b.Subscribe(&protocol.SubscribeRequest{Channel: "chat:room", Tf: &protocol.FilterNode{Key: "k", Cmp: "eq", Val: "keep"}}); r.Error != nil {
		t.Fatalf("subscribe with a tags filter: error %d", r.Error.Code)
	}
	for _, tag := range []string{"keep", "skip", "keep"} {
		if status, body := api("publish", `{"channel":"chat:room","data":{"n":1},"tags":{"k":"`+tag+`"}}`); status != 200 || strings.Contains(body, "error") {
			t.Fatalf("publish: %d %s", status, body)
		}
	}
	if r := a.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "chat:room", Data: []byte(`{"from":"a"}`)}}); r.Error != nil {
		t.Fatalf("client publish: error %d", r.Error.Code)
	}
	a.WaitPubs("chat:room", 4)
	b.WaitPubs("chat:room", 2)

	// c recovers the four publications a saw.
	cl := dialAs("carol", "", "")
	rec := cl.Subscribe(&protocol.SubscribeRequest{Channel: "chat:room", Recover: true, Epoch: first.Epoch, Offset: first.Offset})
	if rec.Error != nil || !rec.Subscribe.Recovered || len(rec.Subscribe.Publications) != 4 {
		t.Fatalf("recovery: %+v", rec)
	}
	// A refused command, a proxy that fails, an API call that fails.
	if r := a.Subscribe(&protocol.SubscribeRequest{Channel: "locked:x"}); r.Error == nil || r.Error.Code != 103 {
		t.Fatalf("subscribe to locked: %+v", r)
	}
	if r := a.Subscribe(&protocol.SubscribeRequest{Channel: "proxied:x"}); r.Error == nil || r.Error.Code != 100 {
		t.Fatalf("subscribe through a failing proxy: %+v", r)
	}
	if _, body := api("publish", `{"channel":"nowhere:x","data":{}}`); !strings.Contains(body, `"code":102`) {
		t.Fatalf("publish to an unknown namespace: %s", body)
	}
	// The server ends b's subscription and carol's connection.
	api("unsubscribe", `{"user":"bob","channel":"chat:room"}`)
	b.WaitPush("unsubscribe", func(p *protocol.Push) bool { return p.Unsubscribe != nil })
	api("disconnect", `{"user":"carol"}`)
	if code := cl.WaitClose().Code; code != 3503 {
		t.Fatalf("carol closed with %d, want 3503", code)
	}

	// The consumer runs a command that publishes nothing, skips two
	// messages, loses its source and gets it back.
	feed.batch(command("info", `{}`), command("no_such_method", `{}`), consume.Message{Err: errors.New("bad header")})
	feed.lag(3)
	feed.down(errors.New("connection reset"))
	feed.up()

	// A channel with state events is occupied: its event fails once, then
	// is delivered.
	a.MustSubscribe("hooked:x")

	page := waitMetrics(t, base, "carol's disconnect, the consumer's work and the state event", func(p *metricsPage) bool {
		return p.value(`gyre_client_disconnects_total{code="3503"}`) == 1 && p.value("gyre_node_connections") == 2 &&
			p.value(`gyre_event_hooks_events_total{kind="channel",outcome="delivered",proxy="channel.proxy.state"}`) == 1 &&
			p.value(`gyre_consumer_up{consumer="feed",type="kafka"}`) == 1 && p.value(`gyre_consumer_source_errors_total{consumer="feed",type="kafka"}`) == 1
	})
	if redis != nil {
		page = failRedis(t, base, redis)
		// A consumed publish fails while Redis is away, and is retried.
		feed.batch(command("publish", `{"channel":"chat:consumed","data":{}}`))
		page = waitMetrics(t, base, "a consumer's retry", func(p *metricsPage) bool {
			return p.value(`gyre_consumer_retries_total{consumer="feed",type="kafka"}`) > 0
		})
	}
	delivered := len(a.Pubs("chat:room")) + len(b.Pubs("chat:room")) + len(cl.Pubs("chat:room"))
	checkTrafficValues(t, page, delivered)
	return page
}

// failRedis stops Redis under the server and waits until its pub/sub
// errors and a failed publish show.
func failRedis(t *testing.T, base string, redis *redistest.Server) *metricsPage {
	redis.Stop()
	if status, body := post(t, base+"/api/publish", `{"channel":"chat:room","data":{}}`); status == 200 && !strings.Contains(body, `"error"`) {
		t.Fatalf("publish with Redis stopped succeeded: %s", body)
	}
	return waitMetrics(t, base, "Redis errors", func(p *metricsPage) bool {
		return p.value(`gyre_redis_pubsub_errors_total{error="connection"}`) > 0 &&
			p.value(`gyre_broker_errors_total{op="publish"}`) > 0 &&
			p.value(`centrifugo_broker_redis_pub_sub_errors{broker_name="",error="connection"}`) > 0
	})
}

// checkTrafficValues checks what runMetricsTraffic did, under both names.
func checkTrafficValues(t *testing.T, p *metricsPage, delivered int) {
	t.Helper()
	want := map[string]float64{
		// Every publication handed to a client, and the one kept back.
		`gyre_client_messages_sent_total{frame_type="push_publication",transport="websocket"}`:                                                     float64(delivered),
		`centrifugo_transport_messages_sent{channel_namespace="",frame_type="push_publication",transport="websocket"}`:                             float64(delivered),
		`gyre_node_publications_filtered_total`:                                                                                                    2,
		`centrifugo_node_tags_filter_dropped_publications{channel_namespace=""}`:                                                                   2,
		`gyre_broker_messages_sent_total{type="publication"}`:                                                                                      4,
		`centrifugo_node_messages_sent_count{channel_namespace="",type="publication"}`:                                                             4,
		`centrifugo_node_messages_received_count{channel_namespace="",type="publication"}`:                                                         4,
		`gyre_broker_messages_sent_total{type="join"}`:                                                                                             3,
		`gyre_client_commands_total{method="subscribe",transport="websocket"}`:                                                                     6,
		`centrifugo_transport_messages_received{channel_namespace="",frame_type="subscribe",transport="websocket"}`:                                6,
		`gyre_client_command_errors_total{code="103",method="subscribe"}`:                                                                          1,
		`centrifugo_client_num_reply_errors{channel_namespace="",code="100",method="subscribe"}`:                                                   1,
		`gyre_proxy_call_errors_total{name="default",protocol="http",type="subscribe"}`:                                                            1,
		`centrifugo_proxy_errors{name="default",protocol="http",type="subscribe"}`:                                                                 1,
		`gyre_api_calls_total{method="publish",protocol="http",result="102"}`:                                                                      1,
		`centrifugo_api_command_errors_total{error="102",method="publish",protocol="http"}`:                                                        1,
		`gyre_client_recoveries_total{has_recovered_publications="yes",recovered="yes"}`:                                                           1,
		`centrifugo_client_recover{channel_namespace="",has_recovered_publications="yes",recovered="yes"}`:                                         1,
		`gyre_client_recovered_publications_sum`:                                                                                                   4,
		`gyre_client_server_unsubscribes_total{code="2000"}`:                                                                                       1,
		`centrifugo_client_num_server_unsubscribes{channel_namespace="",code="2000"}`:                                                              1,
		`centrifugo_client_num_server_disconnects{code="3503"}`:                                                                                    1,
		`gyre_client_connections{client_name="js",client_version="unregistered",transport="websocket"}`:                                            1,
		`centrifugo_client_connections_inflight{accept_protocol="",client_name="unregistered",client_version="unversioned",transport="websocket"}`: 1,
		`gyre_client_connections_accepted_total{client_name="unnamed",client_version="unversioned",transport="websocket"}`:                         1,
		`gyre_client_connections{client_name="unnamed",client_version="unversioned",transport="websocket"}`:                                        0,
		`centrifugo_node_num_clients`: 2,
		`centrifugo_node_num_nodes`:   1,
		`gyre_consumer_messages_total{consumer="feed",outcome="processed",type="kafka"}`: 1,
		`gyre_consumer_messages_total{consumer="feed",outcome="skipped",type="kafka"}`:   2,
		`gyre_consumer_source_errors_total{consumer="feed",type="kafka"}`:                1,
		`gyre_consumer_lag{consumer="feed",type="kafka"}`:                                3,
		`gyre_consumer_up{consumer="feed",type="kafka"}`:                                 1,
		`centrifugo_consumers_messages_processed_total{consumer_name="feed"}`:            3,
	}
	for series, v := range want {
		if got := p.value(series); got != v {
			t.Errorf("%s = %v, want %v", series, got, v)
		}
	}
}

// checkMetricsDoc checks a scrape against the tables of docs/metrics.md;
// the rows of the Redis engine only with redis.
func checkMetricsDoc(t *testing.T, doc *metricsDoc, p *metricsPage, redis bool) {
	t.Helper()
	for _, row := range doc.gyre {
		if row.redis && !redis || row.otel {
			continue
		}
		p.checkFamily(t, row.name, row.typ, row.labels, nil)
	}
	for _, row := range doc.centrifugo {
		if strings.HasPrefix(row.from, "gyre_redis_") && !redis {
			continue
		}
		if !p.checkFamily(t, row.name, row.typ, row.labels, row.empty) {
			continue
		}
		if p.total(row.name) <= 0 && row.typ != "gauge" {
			t.Errorf("%s did not move with the traffic", row.name)
		}
		checkSameAs(t, p, row)
	}
	for name := range p.samples {
		for _, pattern := range doc.notServed {
			if ok, _ := pathMatch(pattern, name); ok {
				t.Errorf("%s is served, yet docs/metrics.md says Gyre does not serve %s", name, pattern)
			}
		}
	}
}

// checkSameAs checks that a Centrifugo series holds what its Gyre series
// holds, leaving out what the page says it leaves out.
func checkSameAs(t *testing.T, p *metricsPage, row metricsDocRow) {
	t.Helper()
	skip := func(map[string]string) bool { return false }
	switch row.name {
	case "centrifugo_client_num_server_disconnects":
		skip = func(l map[string]string) bool { return l["code"] == "3000" }
	case "centrifugo_api_command_errors_total":
		skip = func(l map[string]string) bool { return l["result"] == "ok" }
	}
	var from float64
	for _, name := range append([]string{row.from}, row.plus...) {
		for _, s := range p.families[name].samples {
			if !skip(s.labels) && !strings.HasSuffix(s.name, "_bucket") && !strings.HasSuffix(s.name, "_sum") {
				from += s.value
			}
		}
	}
	if got := p.total(row.name); got != from {
		t.Errorf("%s = %v, but %s = %v", row.name, got, strings.Join(append([]string{row.from}, row.plus...), " + "), from)
	}
}

// waitMetrics scrapes until ok holds.
func waitMetrics(t *testing.T, base, what string, ok func(*metricsPage) bool) *metricsPage {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		p := scrapeMetrics(t, base)
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics never showed %s:\n%s", what, p.text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metricsPage is one scrape: families by name, and every sample line's
// value by series ("name{labels}", labels sorted as served).
type metricsPage struct {
	text     string
	families map[string]*scrapedFamily
	series   map[string]float64
	samples  map[string]bool // sample names: name, name_bucket ...
}

type scrapedFamily struct {
	typ     string
	samples []scrapedSample
}

type scrapedSample struct {
	name   string
	labels map[string]string
	value  float64
}

func scrapeMetrics(t *testing.T, base string) *metricsPage {
	t.Helper()
	status, text := get(t, base+"/metrics")
	if status != 200 {
		t.Fatalf("metrics: status %d", status)
	}
	p := &metricsPage{text: text, families: map[string]*scrapedFamily{}, series: map[string]float64{}, samples: map[string]bool{}}
	for _, line := range strings.Split(text, "\n") {
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(f, " ")
			p.families[name] = &scrapedFamily{typ: typ}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := parseSample(t, line)
		i := strings.LastIndexByte(line, ' ')
		p.series[line[:i]] = s.value
		p.samples[s.name] = true
		if f := p.familyOf(s.name); f != nil {
			f.samples = append(f.samples, s)
		}
	}
	return p
}

// familyOf is the family a sample belongs to: its own name's, or a
// histogram's or summary's for _bucket, _sum and _count.
func (p *metricsPage) familyOf(sample string) *scrapedFamily {
	if f := p.families[sample]; f != nil {
		return f
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(sample, suffix); ok && p.families[base] != nil {
			return p.families[base]
		}
	}
	return nil
}

var sampleLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

func parseSample(t *testing.T, line string) scrapedSample {
	t.Helper()
	i := strings.LastIndexByte(line, ' ')
	v, err := strconv.ParseFloat(line[i+1:], 64)
	if err != nil {
		t.Fatalf("sample %q: %v", line, err)
	}
	s := scrapedSample{name: line[:i], labels: map[string]string{}, value: v}
	if name, labels, ok := strings.Cut(line[:i], "{"); ok {
		s.name = name
		for _, m := range sampleLabel.FindAllStringSubmatch(labels, -1) {
			s.labels[m[1]] = m[2]
		}
	}
	return s
}

// value is a series' value, 0 when it is not served.
func (p *metricsPage) value(series string) float64 { return p.series[series] }

// total sums a family's counter and gauge values, or a histogram's or
// summary's counts.
func (p *metricsPage) total(name string) float64 {
	var sum float64
	f := p.families[name]
	if f == nil {
		return math.NaN()
	}
	counted := name
	if f.typ == "histogram" || f.typ == "summary" {
		counted = name + "_count"
	}
	for _, s := range f.samples {
		if s.name == counted {
			sum += s.value
		}
	}
	return sum
}

// checkFamily checks that family name is served with type typ and, on
// every sample, exactly the labels given (plus le and quantile where they
// belong), those in empty being empty. It reports whether it was served.
func (p *metricsPage) checkFamily(t *testing.T, name, typ string, labels, empty []string) bool {
	t.Helper()
	f := p.families[name]
	if f == nil || len(f.samples) == 0 {
		t.Errorf("%s is not served", name)
		return false
	}
	if f.typ != typ {
		t.Errorf("%s is a %s, documented as a %s", name, f.typ, typ)
	}
	for _, s := range f.samples {
		var got []string
		for l := range s.labels {
			if l != "le" && l != "quantile" {
				got = append(got, l)
			}
		}
		slices.Sort(got)
		if want := slices.Sorted(slices.Values(labels)); !slices.Equal(got, want) {
			t.Errorf("%s has labels %v, documented %v", s.name, got, want)
			return true
		}
		for _, l := range empty {
			if s.labels[l] != "" {
				t.Errorf("%s: label %s = %q, documented as empty", s.name, l, s.labels[l])
			}
		}
	}
	return true
}

// metricsDoc holds the tables of docs/metrics.md.
type metricsDoc struct {
	gyre, centrifugo []metricsDocRow
	notServed        []string
}

type metricsDocRow struct {
	name, typ string
	labels    []string
	empty     []string // labels documented as always empty (label="")
	from      string   // Centrifugo series: the Gyre series read
	plus      []string // and those added to it ("+ `gyre_...`")
	redis     bool     // present with the Redis engine only
	otel      bool     // present with opentelemetry.enabled only (TestTelemetryServer)
}

var (
	backticked     = regexp.MustCompile("`([^`]+)`")
	plusBackticked = regexp.MustCompile("\\+ `([^`]+)`")
)

// parseMetricsDoc reads the tables of docs/metrics.md by their headers:
// Gyre's series (and the runtime's), Centrifugo's served, Centrifugo's
// not served.
func parseMetricsDoc(t *testing.T) *metricsDoc {
	t.Helper()
	b, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := &metricsDoc{}
	var header, section string
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			section = h
		}
		if !strings.HasPrefix(line, "|") {
			header = ""
			continue
		}
		if header == "" {
			header = line
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		name := firstBackticked(cells[0])
		if name == "" {
			continue
		}
		switch header {
		case "| Series | Type | Labels | Meaning |":
			labels, _ := docLabels(cells[2])
			doc.gyre = append(doc.gyre, metricsDocRow{name: name, typ: strings.TrimSpace(cells[1]), labels: labels, redis: strings.Contains(section, "Redis"), otel: section == "OpenTelemetry"})
		case "| Centrifugo series | Type | Labels | From |":
			labels, empty := docLabels(cells[2])
			doc.centrifugo = append(doc.centrifugo, metricsDocRow{name: name, typ: strings.TrimSpace(cells[1]), labels: labels, empty: empty, from: firstBackticked(cells[3]), plus: addedSeries(cells[3])})
		case "| Centrifugo series | Why Gyre does not serve it |":
			for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
				doc.notServed = append(doc.notServed, m[1])
			}
		}
	}
	if len(doc.gyre) < 30 || len(doc.centrifugo) < 30 || len(doc.notServed) < 10 {
		t.Fatalf("docs/metrics.md: read %d Gyre, %d Centrifugo and %d not served series; the tables changed shape", len(doc.gyre), len(doc.centrifugo), len(doc.notServed))
	}
	return doc
}

// addedSeries are the series a From cell adds to its first: "+ `name`".
func addedSeries(cell string) []string {
	var out []string
	for _, m := range plusBackticked.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

func firstBackticked(cell string) string {
	if m := backticked.FindStringSubmatch(cell); m != nil {
		return m[1]
	}
	return ""
}

// docLabels reads a labels cell: `a`, `b=""` ... or —.
func docLabels(cell string) (labels, empty []string) {
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		name, fixed := strings.CutSuffix(m[1], `=""`)
		labels = append(labels, name)
		if fixed {
			empty = append(empty, name)
		}
	}
	return labels, empty
}

// pathMatch matches a documented name with a trailing * as a prefix.
func pathMatch(pattern, name string) (bool, error) {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, prefix), nil
	}
	return name == pattern || strings.HasPrefix(name, pattern+"_"), nil
}

// dashboardSeries lists the series names the dashboard's queries read.
func dashboardSeries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../deploy/grafana/gyre.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("deploy/grafana/gyre.json: %v", err)
	}
	var queries []string
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(x, k)
			}
		case []any:
			for _, x := range v {
				walk(x, key)
			}
		case string:
			if key == "expr" || key == "query" || key == "definition" {
				queries = append(queries, v)
			}
		}
	}
	walk(dash, "")
	series := regexp.MustCompile(`\b(?:gyre|go|process|centrifugo)_[a-zA-Z0-9_]+`)
	var out []string
	for _, q := range queries {
		out = append(out, series.FindAllString(q, -1)...)
	}
	if len(out) < 30 {
		t.Fatalf("deploy/grafana/gyre.json: only %d series in its queries", len(out))
	}
	slices.Sort(out)
	return slices.Compact(out)
}
