package nats

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/nats/natstest"
)

func publish(t testing.TB, b *Broker, ch, data string) {
	t.Helper()
	if _, _, err := b.Publish(ch, []byte(data), broker.PublishOptions{}); err != nil {
		t.Fatalf("Publish(%q): %v", ch, err)
	}
}

// TestTwoNodes: publications, join/leave and control messages go from one
// broker to another over one NATS server.
func TestTwoNodes(t *testing.T) {
	s := natstest.Start(t)
	a, b := newBroker(t, s, Config{}), newBroker(t, s, Config{})
	run(t, a)
	hb := run(t, b)
	if err := b.Subscribe("chat:room"); err != nil {
		t.Fatal(err)
	}
	publish(t, a, "chat:room", "hello")
	publish(t, a, "chat:other", "not subscribed")
	if err := a.PublishJoin("chat:room", &broker.ClientInfo{ClientID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if err := a.PublishLeave("chat:room", &broker.ClientInfo{ClientID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if err := a.PublishControl([]byte("ctl"), ""); err != nil {
		t.Fatal(err)
	}
	hb.waitPubs(t, "chat:room", "", "", "hello")
	eventually(t, "join, leave and control", func() bool {
		hb.mu.Lock()
		defer hb.mu.Unlock()
		return len(hb.joins) == 1 && len(hb.leaves) == 1 && len(hb.controls) == 1
	})
	if got := hb.pubs("chat:other", "", ""); len(got) != 0 {
		t.Errorf("an unsubscribed channel was delivered: %q", got)
	}
	if err := b.Unsubscribe("chat:room"); err != nil {
		t.Fatal(err)
	}
	publish(t, a, "chat:room", "after")
	// A marker on a channel still subscribed shows the earlier one was
	// not delivered because it was not, rather than not yet.
	if err := b.Subscribe("chat:marker"); err != nil {
		t.Fatal(err)
	}
	publish(t, a, "chat:marker", "m")
	hb.waitPubs(t, "chat:marker", "", "", "m")
	hb.waitPubs(t, "chat:room", "", "", "hello")
}

// TestChannelNames: any channel name is one exact subject: names with
// dots, empty tokens, spaces, wildcards, escapes and non-ASCII reach
// their own subscribers and no one else's.
func TestChannelNames(t *testing.T) {
	s := natstest.Start(t)
	b := newBroker(t, s, Config{})
	h := run(t, b)
	names := []string{"plain", "a.b", "a..b", ".a", "a.", "sp ace", "tab\tx", "news:*", "news:>", "news:eu.*",
		"per%cent", "%", "%2A", "é:ü", "$priv", "$ns:x", "ns:", "ns::x", strings.Repeat("x", 255)}
	// Not here: names with an empty namespace (":x"), which the engine
	// refuses (namespace names have two characters at least), and whose
	// subject is that of "x".
	for _, n := range names {
		if err := b.Subscribe(n); err != nil {
			t.Fatalf("Subscribe(%q): %v", n, err)
		}
	}
	for _, n := range names {
		publish(t, b, n, "to "+n)
	}
	for _, n := range names {
		h.waitPubs(t, n, "", "", "to "+n)
	}
	for _, n := range names {
		scope, name := b.split(n)
		if got := b.joinScope(scope, name); got != n {
			t.Errorf("joinScope(split(%q)) = %q", n, got)
		}
		subj := b.channelSubject(n)
		if isWildcard(subj) {
			t.Errorf("subject %q of %q has a wildcard", subj, n)
		}
		if ps, pn := b.parseSubject(subj); ps != scope || pn != name {
			t.Errorf("parseSubject(%q) = %q, %q; want %q, %q", subj, ps, pn, scope, name)
		}
	}
}

// TestPatterns: a pattern receives the channels its NATS subject matches,
// in runs naming its scope and pattern; two overlapping patterns each get
// a publication; join and leave never reach the pattern path.
func TestPatterns(t *testing.T) {
	s := natstest.Start(t)
	a, b := newBroker(t, s, Config{}), newBroker(t, s, Config{})
	run(t, a)
	h := run(t, b)
	for _, p := range []string{"eu.*", "eu.>"} {
		if err := b.SubscribePattern("geo:", p); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.SubscribePattern(":", "*.bus"); err != nil { // channels without namespace
		t.Fatal(err)
	}
	for _, ch := range []string{"geo:eu.paris", "geo:eu.paris.bus", "geo:us.nyc", "geo:eu", "other:eu.paris", "rome.bus", "rome.tram", "x:rome.bus"} {
		publish(t, a, ch, ch)
	}
	if err := a.PublishJoin("geo:eu.paris", &broker.ClientInfo{ClientID: "c"}); err != nil {
		t.Fatal(err)
	}
	publish(t, a, "geo:eu.last", "last")
	h.waitPubs(t, "geo:eu.last", "geo:", "eu.>", "last")
	h.waitPubs(t, "geo:eu.paris", "geo:", "eu.*", "geo:eu.paris")
	h.waitPubs(t, "geo:eu.paris", "geo:", "eu.>", "geo:eu.paris")
	h.waitPubs(t, "geo:eu.paris.bus", "geo:", "eu.>", "geo:eu.paris.bus")
	h.waitPubs(t, "rome.bus", ":", "*.bus", "rome.bus")
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.runs {
		switch r.Channel {
		case "geo:us.nyc", "geo:eu", "other:eu.paris", "rome.tram", "x:rome.bus":
			t.Errorf("%s delivered to pattern %q of %q", r.Channel, r.Pattern, r.Scope)
		}
		if r.Channel == "geo:eu.paris.bus" && r.Pattern == "eu.*" {
			t.Error("eu.* matched geo:eu.paris.bus")
		}
	}
	if len(h.joins) != 0 {
		t.Errorf("joins reached a node with only patterns: %q", h.joins)
	}
}

// TestPatternUnsubscribe: after UnsubscribePattern the pattern gets
// nothing more.
func TestPatternUnsubscribe(t *testing.T) {
	s := natstest.Start(t)
	b := newBroker(t, s, Config{})
	h := run(t, b)
	if err := b.SubscribePattern("geo:", "*"); err != nil {
		t.Fatal(err)
	}
	publish(t, b, "geo:a", "1")
	h.waitPubs(t, "geo:a", "geo:", "*", "1")
	if err := b.UnsubscribePattern("geo:", "*"); err != nil {
		t.Fatal(err)
	}
	publish(t, b, "geo:a", "2")
	if err := b.Subscribe("marker"); err != nil {
		t.Fatal(err)
	}
	publish(t, b, "marker", "m")
	h.waitPubs(t, "marker", "", "", "m")
	h.waitPubs(t, "geo:a", "geo:", "*", "1")
}

// TestRawMode: a channel is a plain subject carrying bare data, both ways:
// what another NATS client publishes reaches subscribers (also through a
// pattern), and what the broker publishes reaches other NATS clients.
func TestRawMode(t *testing.T) {
	s := natstest.Start(t)
	b := newBroker(t, s, Config{RawMode: RawMode{Enabled: true, Prefix: "raw.", ChannelReplacements: map[string]string{":": "."}}})
	h := run(t, b)
	nc, err := natsgo.Connect(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	got := make(chan *natsgo.Msg, 10)
	if _, err := nc.ChanSubscribe("raw.prices.>", got); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe("prices:eur"); err != nil {
		t.Fatal(err)
	}
	if err := b.SubscribePattern("prices:", "*"); err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("raw.prices.eur", []byte(`{"bid":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("raw.prices.usd", []byte(`{"bid":2}`)); err != nil {
		t.Fatal(err)
	}
	h.waitPubs(t, "prices:eur", "", "", `{"bid":1}`)
	h.waitPubs(t, "prices:eur", "prices:", "*", `{"bid":1}`)
	h.waitPubs(t, "prices:usd", "prices:", "*", `{"bid":2}`)

	publish(t, b, "prices:gbp", "bare")
	select {
	case m := <-got:
		for m.Subject != "raw.prices.gbp" {
			m = <-got
		}
		if string(m.Data) != "bare" {
			t.Errorf("raw subscriber got %q, want the bare data", m.Data)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the raw subscriber got nothing")
	}
	if _, _, err := b.Publish("prices:eur", []byte("x"), broker.PublishOptions{HistorySize: 1, HistoryTTL: time.Minute}); !errors.Is(err, ErrNoHistory) {
		t.Errorf("raw publish with history: %v, want ErrNoHistory", err)
	}
	if err := b.PublishJoin("prices:eur", &broker.ClientInfo{}); err != nil {
		t.Errorf("raw PublishJoin: %v", err)
	}
}

// TestOutage: while NATS is down the broker is unhealthy and refuses
// subscriptions and publications; once it is back, every subscribed
// channel and pattern scope is reported lost (publications may have been
// missed), before anything published after.
func TestOutage(t *testing.T) {
	s := natstest.Start(t)
	b := newBroker(t, s, Config{})
	h := run(t, b)
	if err := b.Subscribe("ch"); err != nil {
		t.Fatal(err)
	}
	if err := b.SubscribePattern("geo:", ">"); err != nil {
		t.Fatal(err)
	}
	publish(t, b, "ch", "before")
	h.waitPubs(t, "ch", "", "", "before")
	if err := b.Healthy(); err != nil {
		t.Fatalf("Healthy while connected: %v", err)
	}
	s.Kill()
	eventually(t, "unhealthy", func() bool { return b.Healthy() != nil })
	if err := b.Subscribe("other"); !errors.Is(err, broker.ErrNotAvailable) {
		t.Errorf("Subscribe while down: %v, want ErrNotAvailable", err)
	}
	if _, _, err := b.Publish("ch", []byte("x"), broker.PublishOptions{}); !errors.Is(err, broker.ErrNotAvailable) {
		t.Errorf("Publish while down: %v, want ErrNotAvailable", err)
	}
	s.Restart(t)
	eventually(t, "healthy", func() bool { return b.Healthy() == nil })
	eventually(t, "the loss reported", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.lost) > 0 && len(h.scopes) > 0
	})
	publish(t, b, "ch", "after")
	h.waitPubs(t, "ch", "", "", "before", "after")
	h.mu.Lock()
	defer h.mu.Unlock()
	if want := []string{"pub ch before", "lost ch", "pub ch after"}; !slices.Equal(h.log, want) {
		t.Errorf("order %q, want %q", h.log, want)
	}
	if !slices.Contains(slices.Concat(h.scopes...), "geo:") {
		t.Errorf("scopes lost %q, want geo:", h.scopes)
	}
}

// TestPatternTrace: a publication's trace reaches another node's pattern
// subscription with it, as on the channel's own path; one without a trace
// arrives without.
func TestPatternTrace(t *testing.T) {
	s := natstest.Start(t)
	a, b := newBroker(t, s, Config{}), newBroker(t, s, Config{})
	run(t, a)
	h := run(t, b)
	if err := b.SubscribePattern("geo:", "*"); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe("geo:paris"); err != nil {
		t.Fatal(err)
	}
	tc := []byte("0123456789abcdefghijklmno")
	for _, o := range []broker.PublishOptions{{Trace: tc}, {}} {
		if _, _, err := a.Publish("geo:paris", []byte("x"), o); err != nil {
			t.Fatal(err)
		}
	}
	h.waitPubs(t, "geo:paris", "geo:", "*", "x", "x")
	h.waitPubs(t, "geo:paris", "", "", "x", "x")
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]int{}
	for _, r := range h.runs {
		for _, p := range r.Pubs {
			path := r.Scope + r.Pattern
			want := []byte(nil)
			if seen[path] == 0 {
				want = tc
			}
			seen[path]++
			if !slices.Equal(p.Pub.Trace, want) || (want == nil && p.Pub.Trace != nil) {
				t.Errorf("publication %d on path %q has trace %q, want %q", seen[path], path, p.Pub.Trace, want)
			}
		}
	}
}
