package jetstream_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/jetstream"
	"github.com/gyrehq/gyre/server/consume/jetstream/jetstreamtest"
)

var source jetstreamtest.Source

func TestOrder(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, false)
	const n = 1000
	p.Produce(t, 0, publishMsgs("order", 0, n)...)
	node := newTestNode(t)
	c, _ := p.Consumer("order", "order", false)
	r := node.start(t, c)
	waitFor(t, "every message run", func() bool { return len(node.rec.published("order")) >= n })
	checkOrder(t, node.rec.published("order"), n)
	// Produced while the consumer runs.
	p.Produce(t, 0, publishMsgs("order", n, n)...)
	waitFor(t, "the later messages run", func() bool { return len(node.rec.published("order")) >= 2*n })
	checkOrder(t, node.rec.published("order"), 2*n)
	waitFor(t, "lag 0", func() bool { return r.snapshot().Lag == 0 })
	if s := r.snapshot(); s.Processed != 2*n || s.Skipped != 0 || !s.Connected {
		t.Fatalf("snapshot %+v: want %d processed, none skipped, connected", s, 2*n)
	}
}

// TestMethodForms runs every form a message may take: the method header
// with the request as body, {"method", "payload"} as body, a batch.
func TestMethodForms(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, false)
	p.Produce(t, 0,
		consumetest.Msg{Method: "publish", Payload: []byte(`{"channel":"forms","data":{"n":0}}`)},
		consumetest.Msg{Payload: []byte(`{"method":"publish","payload":{"channel":"forms","data":{"n":1}}}`)},
		consumetest.Msg{Method: "batch", Payload: []byte(`{"commands":[
			{"publish":{"channel":"forms","data":{"n":2}}},
			{"broadcast":{"channels":["forms","forms2"],"data":{"n":3}}}]}`)},
		consumetest.Msg{Payload: []byte(`{"method":"broadcast","payload":{"channels":["forms","forms2"],"data":{"n":4}}}`)},
		consumetest.Msg{Method: "publish", Payload: []byte(`{"channel":"forms","data":{"n":5},"tags":{"k":"v"},"idempotency_key":"x"}`)},
	)
	node := newTestNode(t)
	c, _ := p.Consumer("forms", "forms", false)
	node.start(t, c)
	waitFor(t, "every message run", func() bool { return len(node.rec.published("forms")) >= 6 })
	pubs := node.rec.published("forms")
	checkOrder(t, pubs, 6)
	if got := node.rec.published("forms2"); len(got) != 2 || got[0].Data != `{"n":3}` || got[1].Data != `{"n":4}` {
		t.Fatalf("forms2 got %+v, want n 3 and 4", got)
	}
	if o := pubs[5].Opts; o.Tags["k"] != "v" || o.IdempotencyKey != "x" {
		t.Fatalf("tags %v idempotency key %q, want k=v and x", o.Tags, o.IdempotencyKey)
	}
}

// TestPublicationDataMode publishes bodies into the channels of their
// headers, with idempotency keys, tags, delta and versions.
func TestPublicationDataMode(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, false)
	h := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	p.Produce(t, 0,
		consumetest.Msg{Payload: []byte(`{"n":0}`), Headers: h("centrifugo-channels", "pd")},
		consumetest.Msg{Payload: []byte(`{"n":1}`), Headers: h("centrifugo-channels", "pd", "centrifugo-idempotency-key", "k1",
			"centrifugo-tag-color", "red", "centrifugo-tag-size", "xl", "centrifugo-delta", "true")},
		// The same key again: suppressed by the broker.
		consumetest.Msg{Payload: []byte(`{"n":1}`), Headers: h("centrifugo-channels", "pd", "centrifugo-idempotency-key", "k1")},
		// Several channels: a broadcast.
		consumetest.Msg{Payload: []byte(`{"n":2}`), Headers: h("centrifugo-channels", "pd, pd2")},
		consumetest.Msg{Payload: []byte(`{"n":3}`), Headers: h("centrifugo-channels", "pdv", "centrifugo-version", "2", "centrifugo-version-epoch", "e")},
		// An older version: dropped.
		consumetest.Msg{Payload: []byte(`{"n":-1}`), Headers: h("centrifugo-channels", "pdv", "centrifugo-version", "1", "centrifugo-version-epoch", "e")},
		consumetest.Msg{Payload: []byte(`{"n":4}`), Headers: h("centrifugo-channels", "pdv", "centrifugo-version", "3", "centrifugo-version-epoch", "e")},
		consumetest.Msg{Payload: []byte(`{"n":3}`), Headers: h("centrifugo-channels", "pd")},
	)
	node := newTestNode(t)
	c, _ := p.Consumer("pd", "pd", true)
	r := node.start(t, c)
	waitFor(t, "every message run", func() bool { return r.snapshot().Processed == 8 })
	checkOrder(t, node.rec.published("pd"), 4)
	pd := node.rec.published("pd")
	if o := pd[1].Opts; o.IdempotencyKey != "k1" || o.Tags["color"] != "red" || o.Tags["size"] != "xl" || len(o.Tags) != 2 || !o.UseDelta {
		t.Fatalf("publication 1 options %+v: want key k1, tags color=red size=xl, delta", o)
	}
	if got := node.rec.published("pd2"); len(got) != 1 || got[0].Data != `{"n":2}` {
		t.Fatalf("pd2 got %+v, want n 2", got)
	}
	pdv := node.rec.published("pdv")
	if len(pdv) != 2 || pdv[0].Data != `{"n":3}` || pdv[1].Data != `{"n":4}` || pdv[1].Opts.Version != 3 || pdv[1].Opts.VersionEpoch != "e" {
		t.Fatalf("pdv got %+v, want n 3 and 4 (version 3, epoch e)", pdv)
	}
	// The repeated key and the stale version.
	if s := node.rec.suppressedCount(); s != 2 {
		t.Fatalf("%d publications suppressed, want 2", s)
	}
}

// TestMalformed skips and counts messages that cannot run: a header that
// is not what it must be (terminated: JetStream's advisory names it), a
// body that is not a command (acknowledged). Neither comes back, and the
// messages after them run.
func TestMalformed(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, false)
	advisories := make(chan *nats.Msg, 10)
	sub, err := p.NC.ChanSubscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED."+p.Stream+".>", advisories)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := p.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	bad := consumetest.Msg{Payload: []byte(`{"n":-1}`), Headers: map[string]string{"centrifugo-channels": "bad", "centrifugo-version": "one"}}
	p.Produce(t, 0,
		consumetest.Msg{Payload: []byte(`{"n":0}`), Headers: map[string]string{"centrifugo-channels": "bad"}},
		bad,
		consumetest.Msg{Payload: []byte(`not json`), Headers: map[string]string{"centrifugo-channels": "bad", "centrifugo-delta": "maybe"}},
		consumetest.Msg{Payload: []byte(`{"n":1}`), Headers: map[string]string{"centrifugo-channels": "bad"}},
	)
	node := newTestNode(t)
	c, _ := p.Consumer("bad", "bad", true)
	r := node.start(t, c)
	waitFor(t, "every message done", func() bool { s := r.snapshot(); return s.Processed+s.Skipped == 4 })
	if s := r.snapshot(); s.Skipped != 2 || !strings.Contains(s.Error, "malformed") {
		t.Fatalf("snapshot %+v: want 2 skipped, a malformed message the last error", s)
	}
	checkOrder(t, node.rec.published("bad"), 2)
	for _, seq := range []uint64{2, 3} {
		select {
		case m := <-advisories:
			var adv struct {
				StreamSeq uint64 `json:"stream_seq"`
				Consumer  string `json:"consumer"`
			}
			if err := json.Unmarshal(m.Data, &adv); err != nil {
				t.Fatal(err)
			}
			if adv.StreamSeq != seq || adv.Consumer != "bad" {
				t.Fatalf("termination advisory %s: want stream_seq %d of consumer bad", m.Data, seq)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no termination advisory for stream seq %d", seq)
		}
	}

}

// TestMalformedCommand skips and counts bodies that are not commands;
// they are acknowledged.
func TestMalformedCommand(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, false)
	p.Produce(t, 0,
		consumetest.Msg{Payload: []byte(`{"method":"nope"}`)},
		consumetest.Msg{Payload: []byte(`[`)},
		consumetest.Msg{Method: "publish", Payload: []byte(`{"channel":`)},
		publishMsgs("badcmd", 0, 1)[0],
	)
	node := newTestNode(t)
	c, _ := p.Consumer("badcmd", "badcmd", false)
	r := node.start(t, c)
	waitFor(t, "every message done", func() bool { s := r.snapshot(); return s.Processed+s.Skipped == 4 })
	if s := r.snapshot(); s.Skipped != 3 || s.Processed != 1 {
		t.Fatalf("snapshot %+v: want 3 skipped, 1 processed", s)
	}
	checkOrder(t, node.rec.published("badcmd"), 1)
	waitFor(t, "nothing pending", func() bool {
		info := consumerInfo(t, p, "badcmd")
		return info.NumPending == 0 && info.NumAckPending == 0
	})
}

func consumerInfo(t testing.TB, p *jetstreamtest.Place, durable string) *natsjs.ConsumerInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := p.JS.Consumer(ctx, p.Stream, durable)
	if err != nil {
		t.Fatal(err)
	}
	return c.CachedInfo()
}

// TestUseExistingConsumerMissing: a durable that use_existing_consumer
// names must exist; the consumer stops at once, saying so.
func TestUseExistingConsumerMissing(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, false)
	node := newTestNode(t)
	c := p.ConsumerWith("existing", "nosuch", func(j map[string]any) { j["use_existing_consumer"] = true })
	r := node.start(t, c)
	waitFor(t, "the consumer to stop", func() bool { return !r.snapshot().Running })
	if s := r.snapshot(); !strings.Contains(s.Error, `durable consumer "nosuch"`) || !strings.Contains(s.Error, "does not exist") {
		t.Fatalf("error %q: want the durable named as missing", s.Error)
	}
}

// TestUseExistingConsumer reads a durable made by someone else, as it
// is.
func TestUseExistingConsumer(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.JS.CreateConsumer(ctx, p.Stream, natsjs.ConsumerConfig{
		Durable: "mine", AckPolicy: natsjs.AckExplicitPolicy, MaxAckPending: 7, FilterSubject: p.Subject,
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Produce(t, 0, publishMsgs("existing", 0, 100)...)
	node := newTestNode(t)
	c := p.ConsumerWith("existing", "mine", func(j map[string]any) { j["use_existing_consumer"] = true })
	node.start(t, c)
	waitFor(t, "every message run", func() bool { return len(node.rec.published("existing")) >= 100 })
	checkOrder(t, node.rec.published("existing"), 100)
	if got := consumerInfo(t, p, "mine").Config.MaxAckPending; got != 7 {
		t.Fatalf("max ack pending %d: the durable was changed", got)
	}
}

// TestStreamMissing: the stream may be made after the consumer starts;
// until then the consumer says it waits for it.
func TestStreamMissing(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, false)
	node := newTestNode(t)
	name := jetstreamtest.NewName("later")
	c := p.ConsumerWith("later", "later", func(j map[string]any) {
		j["stream_name"] = name
		j["subjects"] = []string{name + ".in"}
	})
	r := node.start(t, c)
	waitFor(t, "the missing stream reported", func() bool {
		return strings.Contains(r.snapshot().Error, `stream "`+name+`" not found`)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.JS.CreateStream(ctx, natsjs.StreamConfig{Name: name, Subjects: []string{name + ".>"}}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		r.stop()
		_ = p.JS.DeleteStream(context.Background(), name)
	}()
	for _, m := range publishMsgs("later", 0, 10) {
		if _, err := p.JS.PublishMsg(ctx, &nats.Msg{Subject: name + ".in", Data: m.Payload, Header: nats.Header{"centrifugo-method": {"publish"}}}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every message run", func() bool { return len(node.rec.published("later")) >= 10 })
	checkOrder(t, node.rec.published("later"), 10)
	if s := r.snapshot(); !s.Running || !s.Connected {
		t.Fatalf("snapshot %+v: want running and connected", s)
	}
}

// TestSeveralSubjects filters the durable on two subjects, which needs
// nats-server 2.10; an older server is refused at once rather than
// delivering the whole stream.
func TestSeveralSubjects(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, false)
	node := newTestNode(t)
	c := p.ConsumerWith("subjects", "subjects", func(j map[string]any) {
		j["subjects"] = []string{p.Stream + ".a", p.Stream + ".b"}
	})
	if !serverAtLeast210(p.NC.ConnectedServerVersion()) {
		r := node.start(t, c)
		waitFor(t, "the consumer to stop", func() bool { return !r.snapshot().Running })
		if s := r.snapshot(); !strings.Contains(s.Error, "2.10") {
			t.Fatalf("error %q: want nats-server 2.10 named", s.Error)
		}
		return
	}
	for i, subj := range []string{".a", ".c", ".b"} {
		m := publishMsgs("subjects", i, 1)[0]
		p.Publish(t, &nats.Msg{Subject: p.Stream + subj, Data: m.Payload, Header: nats.Header{"centrifugo-method": {"publish"}}})
	}
	node.start(t, c)
	waitFor(t, "the messages of .a and .b run", func() bool { return len(node.rec.published("subjects")) >= 2 })
	if got := node.rec.published("subjects"); got[0].Data != `{"n":0}` || got[1].Data != `{"n":2}` {
		t.Fatalf("got %+v, want n 0 and 2", got)
	}
}

func serverAtLeast210(v string) bool {
	return jetstream.VersionAtLeast(v, 2, 10)
}

// TestSuite is the suite every consumer type passes.
func TestSuite(t *testing.T) {
	consumetest.Run(t, source)
}

// TestConfigRefused: a durable configuration the server refuses stops the
// consumer at once, with the server's reason.
func TestConfigRefused(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, false)
	node := newTestNode(t)
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"subject", func(j map[string]any) { j["subjects"] = []string{"elsewhere.x"} }, "filter subject"},
		{"deliver_policy", func(j map[string]any) { j["deliver_policy"] = "new" }, "deliver policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			durable := "refused_" + tc.name
			if tc.name == "deliver_policy" {
				// The durable exists with deliver policy all.
				c := p.ConsumerWith("first", durable, nil)
				r := node.start(t, c)
				waitFor(t, "the durable made", func() bool { return r.snapshot().Connected })
				r.stop()
			}
			r := node.start(t, p.ConsumerWith(tc.name, durable, tc.edit))
			waitFor(t, "the consumer to stop", func() bool { return !r.snapshot().Running })
			if s := r.snapshot(); !strings.Contains(s.Error, tc.want) || !strings.Contains(s.Error, durable) {
				t.Fatalf("error %q: want the durable and %q named", s.Error, tc.want)
			}
		})
	}
}
