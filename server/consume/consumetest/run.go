package consumetest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/token"
)

// engine is a server-level engine the suite runs on.
type engine struct {
	name      string
	multinode bool
	// set configures c to run on the engine, under prefix (nodes with
	// the same prefix share channels).
	set func(t testing.TB, c *config.Config, prefix string)
}

var engines = []engine{
	{name: "memory", set: func(testing.TB, *config.Config, string) {}},
	{name: "redis", multinode: true, set: func(t testing.TB, c *config.Config, prefix string) {
		c.Engine.Type = "redis"
		c.Engine.Redis.Address = []string{enginetest.SharedRedis(t)}
		c.Engine.Redis.Prefix = prefix
	}},
	{name: "nats", multinode: true, set: func(t testing.TB, c *config.Config, prefix string) {
		c.Broker.Enabled = true
		c.Broker.Type = "nats"
		c.Broker.Nats.URL = enginetest.SharedNATS(t)
		c.Broker.Nats.Prefix = prefix
		c.Broker.Nats.JetStream.Enabled = true
	}},
}

var seq atomic.Int64

// unique is a name no other test of the binary has.
func unique(what string) string { return what + strconv.FormatInt(seq.Add(1), 10) }

const (
	secret = "consumetest-secret"
	// ns is the namespace every channel of the suite is in: with history,
	// so that what a consumer published can be read back in order.
	ns = "ct"
)

// Run runs the suite on src: every case on every engine.
func Run(t *testing.T, src Source) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			t.Run("Order", func(t *testing.T) { testOrder(t, src, e) })
			t.Run("Methods", func(t *testing.T) { testMethods(t, src, e) })
			t.Run("PublicationMode", func(t *testing.T) { testPublicationMode(t, src, e) })
			t.Run("Malformed", func(t *testing.T) { testMalformed(t, src, e) })
			t.Run("SourceOutage", func(t *testing.T) { testSourceOutage(t, src, e) })
			t.Run("Shutdown", func(t *testing.T) { testShutdown(t, src, e) })
			if e.multinode {
				t.Run("TwoNodes", func(t *testing.T) { testTwoNodes(t, src, e) })
			}
		})
	}
	t.Run("redis/BrokerDown", func(t *testing.T) { testBrokerDown(t, src) })
}

// node is a running Gyre server with consumers.
type node struct {
	t   testing.TB
	s   *server.Server
	url string // ws://.../connection/websocket
}

// serverConfig is the config of a node on e under prefix, consuming cs.
func serverConfig(t testing.TB, e engine, prefix string, cs ...config.Consumer) *config.Config {
	c := config.Default()
	c.HTTPServer.Address = "127.0.0.1"
	c.HTTPServer.Port = 0
	c.Client.Token.HMACSecretKey = secret
	c.HTTPAPI.Insecure = true
	c.Channel.Namespaces = []config.Namespace{{Name: ns, ChannelOptions: config.ChannelOptions{
		HistorySize: 100_000, HistoryTTL: 10 * time.Minute, AllowSubscribeForClient: true,
	}}}
	c.Consumers = cs
	e.set(t, c, prefix)
	if err := c.Validate(); err != nil {
		t.Fatalf("consumetest: config: %v", err)
	}
	return c
}

// startNode runs a server for c until the test ends (or Stop).
func startNode(t testing.TB, c *config.Config) *node {
	t.Helper()
	s, err := server.New(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("consumetest: server: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("consumetest: start: %v", err)
	}
	n := &node{t: t, s: s, url: "ws://" + s.Addr().String() + "/connection/websocket"}
	t.Cleanup(func() { n.stop() })
	return n
}

func (n *node) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.s.Shutdown(ctx); err != nil {
		n.t.Logf("consumetest: shutdown: %v", err)
	}
}

// stats is the state of the node's only consumer.
func (n *node) stats() consume.Snapshot {
	snaps := n.s.Consumers()
	if len(snaps) != 1 {
		n.t.Fatalf("consumetest: the node runs %d consumers, want 1", len(snaps))
	}
	return snaps[0]
}

// history is the data of the channel's publications, oldest first.
func history(t testing.TB, n *node, channel string) []string {
	t.Helper()
	pubs, _, err := n.s.Node().History(channel, -1, nil, false)
	if err != nil {
		t.Fatalf("consumetest: history of %s: %v", channel, err)
	}
	out := make([]string, len(pubs))
	for i, p := range pubs {
		out[i] = string(p.Data)
	}
	return out
}

// waitHistory waits until the channel's history holds want (exactly),
// failing with what it holds after waitLimit.
func waitHistory(t testing.TB, n *node, channel string, want []string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	var got []string
	for time.Now().Before(deadline) {
		got = history(t, n, channel)
		if len(got) >= len(want) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := firstDiff(got, want); d >= 0 {
		t.Fatalf("consumetest: history of %s: %d publications, want %d; first difference at %d: %s; consumers: %+v", channel, len(got), len(want), d, pair(got, want, d), n.s.Consumers())
	}
}

// waitLimit bounds every wait of the suite: generous, for a machine
// running many test binaries at once.
const waitLimit = 3 * time.Minute

// waitFor polls cond until it holds, failing after waitLimit.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("consumetest: no %s within %v", what, waitLimit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Diff describes where got first differs from want, or is "" when they
// are equal: for tests of a source package that check channel history
// as the suite does.
func Diff(got, want []string) string {
	d := firstDiff(got, want)
	if d < 0 {
		return ""
	}
	return fmt.Sprintf("%d publications, want %d; first difference at %d: %s", len(got), len(want), d, pair(got, want, d))
}

// Data is the JSON data of the i-th publication of the suite's
// sequences, {"n":i}.
func Data(i int) string { return data(i) }

// Want is the data of the publications from..to-1 of a sequence.
func Want(from, to int) []string { return want(from, to) }

func firstDiff(got, want []string) int {
	for i := range max(len(got), len(want)) {
		if i >= len(got) || i >= len(want) || got[i] != want[i] {
			return i
		}
	}
	return -1
}

func pair(got, want []string, i int) string {
	g, w := "(none)", "(none)"
	if i < len(got) {
		g = got[i]
	}
	if i < len(want) {
		w = want[i]
	}
	return fmt.Sprintf("got %s, want %s", g, w)
}

// data is the JSON data of the i-th publication of a sequence.
func data(i int) string { return `{"n":` + strconv.Itoa(i) + `}` }

// publish is a publish command message: in method form (the method where
// the source names it) or as a {"method","payload"} body.
func publish(channel string, i int, idemKey string, bodyForm bool) Msg {
	req := map[string]any{"channel": channel, "data": json.RawMessage(data(i))}
	if idemKey != "" {
		req["idempotency_key"] = idemKey
	}
	return command("publish", req, bodyForm)
}

// command is the message of method with request req.
func command(method string, req any, bodyForm bool) Msg {
	payload, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	if !bodyForm {
		return Msg{Method: method, Payload: payload}
	}
	body, err := json.Marshal(map[string]any{"method": method, "payload": json.RawMessage(payload)})
	if err != nil {
		panic(err)
	}
	return Msg{Payload: body}
}

// sequence is the publications 0..n-1 into channel, every one with an
// idempotency key made of key and its number.
func sequence(channel, key string, from, to int) []Msg {
	msgs := make([]Msg, 0, to-from)
	for i := from; i < to; i++ {
		msgs = append(msgs, publish(channel, i, key+"-"+strconv.Itoa(i), i%2 == 1))
	}
	return msgs
}

// byNumber orders the data of publications by their number.
func byNumber(a, b string) int {
	var x, y struct {
		N int `json:"n"`
	}
	_ = json.Unmarshal([]byte(a), &x)
	_ = json.Unmarshal([]byte(b), &y)
	return x.N - y.N
}

func want(from, to int) []string {
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, data(i))
	}
	return out
}

// client is a connected WebSocket client of user.
func client(t testing.TB, n *node, user string) *wstest.Client {
	t.Helper()
	tok, err := token.SignHMAC("HS256", []byte(secret), map[string]any{"sub": user, "exp": time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	c := wstest.Dial(t, n.url, protocol.TypeJSON, wstest.WaitLimit(time.Minute))
	if r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok}}); r.Error != nil {
		t.Fatalf("consumetest: connect: %d %s", r.Error.Code, r.Error.Message)
	}
	return c
}

func subscribe(t testing.TB, c *wstest.Client, channel string) {
	t.Helper()
	if r := c.Call(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: channel}}); r.Error != nil {
		t.Fatalf("consumetest: subscribe %s: %d %s", channel, r.Error.Code, r.Error.Message)
	}
}

func pubData(pubs []*protocol.Publication) []string {
	out := make([]string, len(pubs))
	for i, p := range pubs {
		out[i] = string(p.Data)
	}
	return out
}

// testOrder: messages of several partitions, each into a channel of its
// own, reach history and a subscribed client in the order of their
// partition.
func testOrder(t *testing.T, src Source, e engine) {
	place := src.Open(t, 4, false)
	cons, _ := place.Consumer(unique("order"), unique("group"), false)
	n := startNode(t, serverConfig(t, e, unique("p"), cons))
	const per = 300
	channels := make([]string, place.Partitions())
	c := client(t, n, "watcher")
	for p := range channels {
		channels[p] = ns + ":" + unique("order")
		subscribe(t, c, channels[p])
	}
	key := unique("k")
	for p, ch := range channels {
		place.Produce(t, p, sequence(ch, key, 0, per)...)
	}
	for _, ch := range channels {
		waitHistory(t, n, ch, want(0, per))
		got := pubData(c.WaitPubs(ch, per))
		if d := firstDiff(got, want(0, per)); d >= 0 {
			t.Fatalf("client, channel %s: %d publications; first difference at %d: %s", ch, len(got), d, pair(got, want(0, per), d))
		}
	}
	waitFor(t, "processed count", func() bool { return n.stats().Processed == uint64(per*len(channels)) })
	if s := n.stats(); s.Skipped != 0 {
		t.Errorf("skipped %d messages, want 0 (last error %q)", s.Skipped, s.Error)
	}
}

// testMethods: every form of command and a range of methods.
func testMethods(t *testing.T, src Source, e engine) {
	place := src.Open(t, 1, false)
	cons, _ := place.Consumer(unique("methods"), unique("group"), false)
	n := startNode(t, serverConfig(t, e, unique("p"), cons))
	a, b, gone := ns+":"+unique("a"), ns+":"+unique("b"), ns+":"+unique("gone")
	user := unique("user")
	victim := client(t, n, user)

	place.Produce(t, 0,
		publish(a, 0, "", false),
		publish(a, 1, "", true),
		command("broadcast", map[string]any{"channels": []string{a, b}, "data": json.RawMessage(data(2))}, false),
		command("batch", map[string]any{"commands": []any{
			map[string]any{"publish": map[string]any{"channel": a, "data": json.RawMessage(data(3))}},
			map[string]any{"publish": map[string]any{"channel": b, "data": json.RawMessage(data(4))}},
		}}, true),
		publish(gone, 5, "", false),
		command("history_remove", map[string]any{"channel": gone}, false),
		command("disconnect", map[string]any{"user": user}, true),
		publish(b, 6, "", false),
	)
	waitHistory(t, n, b, []string{data(2), data(4), data(6)})
	waitHistory(t, n, a, []string{data(0), data(1), data(2), data(3)})
	if got := history(t, n, gone); len(got) != 0 {
		t.Errorf("history of %s after history_remove: %v, want none", gone, got)
	}
	victim.WaitClose()
	waitFor(t, "processed count", func() bool { return n.stats().Processed == 8 })
}

// testPublicationMode: messages whose body is the data, channels and
// options in headers or fields.
func testPublicationMode(t *testing.T, src Source, e engine) {
	place := src.Open(t, 1, false)
	cons, ok := place.Consumer(unique("pubmode"), unique("group"), true)
	if !ok {
		t.Skipf("%s has no publication data mode", src.Type())
	}
	n := startNode(t, serverConfig(t, e, unique("p"), cons))
	a, b := ns+":"+unique("a"), ns+":"+unique("b")
	c := client(t, n, "watcher")
	subscribe(t, c, a)
	key := unique("idem")
	place.Produce(t, 0,
		Msg{Payload: []byte(data(0)), Headers: map[string]string{"centrifugo-channels": a, "centrifugo-tag-color": "red"}},
		Msg{Payload: []byte(data(1)), Headers: map[string]string{"centrifugo-channels": a + "," + b, "centrifugo-idempotency-key": key}},
		// The same idempotency key: a redelivery, published once.
		Msg{Payload: []byte(data(1)), Headers: map[string]string{"centrifugo-channels": a + "," + b, "centrifugo-idempotency-key": key}},
		Msg{Payload: []byte(data(2)), Headers: map[string]string{"centrifugo-channels": b, "centrifugo-version": "5", "centrifugo-version-epoch": "e1"}},
		// Older than the version before: dropped.
		Msg{Payload: []byte(data(3)), Headers: map[string]string{"centrifugo-channels": b, "centrifugo-version": "4", "centrifugo-version-epoch": "e1"}},
		Msg{Payload: []byte(data(4)), Headers: map[string]string{"centrifugo-channels": b}},
	)
	waitHistory(t, n, b, []string{data(1), data(2), data(4)})
	waitHistory(t, n, a, []string{data(0), data(1)})
	pubs := c.WaitPubs(a, 2)
	if got := pubs[0].Tags["color"]; got != "red" {
		t.Errorf("tag color = %q, want red (tags %v)", got, pubs[0].Tags)
	}
	waitFor(t, "processed count", func() bool { return n.stats().Processed == 6 })
}

// testMalformed: messages that can never run are skipped, counted and
// acknowledged; those after them run.
func testMalformed(t *testing.T, src Source, e engine) {
	place := src.Open(t, 1, false)
	cons, _ := place.Consumer(unique("malformed"), unique("group"), false)
	n := startNode(t, serverConfig(t, e, unique("p"), cons))
	ch := ns + ":" + unique("m")
	place.Produce(t, 0,
		publish(ch, 0, "", false),
		Msg{Payload: []byte(`{"method": "publish", "payload": {"channel": `)}, // cut short
		Msg{Payload: []byte(`{"payload": {"channel": "` + ch + `"}}`)},        // no method
		Msg{Method: "no_such_method", Payload: []byte(`{}`)},
		command("publish", map[string]any{"channel": "nosuchns:x", "data": json.RawMessage(data(9))}, false),
		command("publish", map[string]any{"data": json.RawMessage(data(9))}, true), // no channel
		publish(ch, 1, "", true),
	)
	waitHistory(t, n, ch, want(0, 2))
	// The counts follow the publications: a message is counted once its
	// batch is done, which may be after its publication is in history.
	waitFor(t, "skipped and processed counts", func() bool { s := n.stats(); return s.Skipped == 5 && s.Processed >= 2 })
	if s := n.stats(); s.Processed != 2 || s.Error == "" {
		t.Errorf("processed %d, want 2; last error %q, want one", s.Processed, s.Error)
	}
	// Acknowledged: a node of the same group started later finds
	// nothing left to run.
	n.stop()
	n2 := startNode(t, serverConfig(t, e, unique("p"), cons))
	place.Produce(t, 0, publish(ch+"x", 0, "", false))
	waitHistory(t, n2, ch+"x", want(0, 1))
	waitFor(t, "second node's processed count", func() bool { return n2.stats().Processed >= 1 })
	if s := n2.stats(); s.Skipped != 0 || s.Processed != 1 {
		t.Errorf("second node: processed %d, skipped %d; want 1 and 0: skipped messages were not acknowledged", s.Processed, s.Skipped)
	}
}

// testSourceOutage: the source goes away mid-stream and comes back:
// nothing lost, nothing out of order.
func testSourceOutage(t *testing.T, src Source, e engine) {
	place := src.Open(t, 2, true)
	cons, _ := place.Consumer(unique("outage"), unique("group"), false)
	n := startNode(t, serverConfig(t, e, unique("p"), cons))
	chans := []string{ns + ":" + unique("o"), ns + ":" + unique("o")}
	key := unique("k")
	const half = 500
	for p := range place.Partitions() {
		place.Produce(t, p, sequence(chans[p%2], key+strconv.Itoa(p), 0, half)...)
	}
	place.Outage(t, 2*time.Second)
	for p := range place.Partitions() {
		place.Produce(t, p, sequence(chans[p%2], key+strconv.Itoa(p), half, 2*half)...)
	}
	for p := range place.Partitions() {
		waitHistory(t, n, chans[p%2], want(0, 2*half))
	}
}

// testShutdown: a node shut down mid-stream acknowledges what it ran; a
// node started after it runs the rest, each message once.
func testShutdown(t *testing.T, src Source, e engine) {
	place := src.Open(t, 1, false)
	name, group, prefix := unique("shutdown"), unique("group"), unique("p")
	cons, _ := place.Consumer(name, group, false)
	ch := ns + ":" + unique("s")
	const total = 3000
	place.Produce(t, 0, sequence(ch, unique("k"), 0, total)...)
	n := startNode(t, serverConfig(t, e, prefix, cons))
	waitFor(t, "a first message run", func() bool { return n.stats().Processed > 0 })
	n.stop()
	first := n.stats().Processed
	if e.name == "memory" {
		// A new memory node has a history of its own: check that the
		// second node runs exactly what the first left.
		n2 := startNode(t, serverConfig(t, e, prefix, cons))
		if first < total {
			waitHistory(t, n2, ch, want(int(first), total))
		}
		return
	}
	n2 := startNode(t, serverConfig(t, e, prefix, cons))
	waitHistory(t, n2, ch, want(0, total))
}

// testTwoNodes: two nodes of one group share the place: each message
// runs once, in order per partition (where the source keeps it across
// nodes; see Unordered).
func testTwoNodes(t *testing.T, src Source, e engine) {
	place := src.Open(t, 4, false)
	group, prefix := unique("group"), unique("p")
	consA, _ := place.Consumer(unique("a"), group, false)
	consB, _ := place.Consumer(unique("b"), group, false)
	a := startNode(t, serverConfig(t, e, prefix, consA))
	b := startNode(t, serverConfig(t, e, prefix, consB))
	chans := make([]string, place.Partitions())
	key := unique("k")
	const per = 400
	for p := range chans {
		chans[p] = ns + ":" + unique("two")
		place.Produce(t, p, sequence(chans[p], key+strconv.Itoa(p), 0, per)...)
	}
	for _, ch := range chans {
		if OrderedAcrossNodes(place) {
			waitHistory(t, a, ch, want(0, per))
			continue
		}
		waitCount(t, a, ch, per)
		got := history(t, a, ch)
		slices.SortFunc(got, byNumber)
		if d := firstDiff(got, want(0, per)); d >= 0 {
			t.Fatalf("history of %s, sorted: first difference at %d: %s", ch, d, pair(got, want(0, per), d))
		}
	}
	total := uint64(per * len(chans))
	waitFor(t, "every message run", func() bool { return a.stats().Processed+b.stats().Processed >= total })
	t.Logf("node a ran %d, node b %d", a.stats().Processed, b.stats().Processed)
}

// testBrokerDown: while the engine's Redis is down, commands fail for a
// temporary reason: they are run again, their messages not acknowledged,
// and once Redis is back every message is published, in order.
func testBrokerDown(t *testing.T, src Source) {
	rs := redistest.Start(t)
	place := src.Open(t, 1, false)
	cons, _ := place.Consumer(unique("down"), unique("group"), false)
	c := serverConfig(t, engines[0], "", cons)
	c.Engine.Type = "redis"
	c.Engine.Redis.Address = []string{rs.Addr}
	c.Engine.Redis.Prefix = unique("p")
	c.Engine.Redis.IOTimeout = 500 * time.Millisecond
	n := startNode(t, c)
	ch := ns + ":" + unique("d")
	key := unique("k")
	place.Produce(t, 0, sequence(ch, key, 0, 10)...)
	waitHistory(t, n, ch, want(0, 10))
	// The publications show in history before the node has their
	// replies: killed in between, Redis would fail a batch that ran.
	waitFor(t, "the first 10 run", func() bool { return n.stats().Processed >= 10 })

	rs.Kill()
	place.Produce(t, 0, sequence(ch, key, 10, 20)...)
	waitFor(t, "retries while Redis is down", func() bool { return n.stats().Retries > 0 })
	if p := n.stats().Processed; p != 10 {
		t.Fatalf("processed %d while Redis was down, want 10", p)
	}
	rs.Restart()
	// Redis lost its data (no persistence): the stream starts again,
	// holding what ran after the restart, in order.
	waitHistory(t, n, ch, want(10, 20))
	if s := n.stats(); s.Skipped != 0 {
		t.Errorf("skipped %d messages: a broker down must not skip (last error %q)", s.Skipped, s.Error)
	}
}
