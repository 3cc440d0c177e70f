package redisstream_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/redisstream"
	"github.com/gyrehq/gyre/server/consume/redisstream/redisstreamtest"
)

// TestOrder: entries added before the consumer starts and while it runs
// are published once each, in stream order, and all acknowledged.
func TestOrder(t *testing.T) {
	t.Parallel()
	p := redisstreamtest.Open(t, 1, false)
	n, exec := newNode(t)
	c, _ := p.Consumer("order", "g", false)
	makeGroup(t, p.Client, p.Keys[0], "g")
	p.Produce(t, 0, publishes("order", 0, 1000)...)
	r := start(t, exec, c)
	p.Produce(t, 0, publishes("order", 1000, 2000)...)
	waitHistory(t, n, "order", 2000)
	r.stop()
	wantSequence(t, numbers(t, history(t, n, "order")), 0, 2000)
	if got := pending(t, p.Client, p.Keys[0], "g"); got != 0 {
		t.Errorf("%d entries pending after the consumer stopped, want 0", got)
	}
	if n, err := p.Client.Do(context.Background(), p.Client.B().Exists().Key("gyre.lease.g."+p.Keys[0]).Build()).AsInt64(); err != nil || n != 0 {
		t.Errorf("lease of the stream after the consumer stopped: %d, %v; want it given up", n, err)
	}
	if s := r.snapshot(); s.Processed != 2000 || s.Skipped != 0 {
		t.Errorf("processed %d, skipped %d; want 2000, 0", s.Processed, s.Skipped)
	}
}

// TestNewGroupStartsAtEnd: a group the consumer makes starts at the end
// of the stream, as Centrifugo's does: entries added before are not run.
func TestNewGroupStartsAtEnd(t *testing.T) {
	t.Parallel()
	p := redisstreamtest.Open(t, 1, false)
	n, exec := newNode(t)
	c, _ := p.Consumer("end", "g", false)
	// Consumer made the group, as a producer would: take it away.
	if err := p.Client.Do(context.Background(), p.Client.B().XgroupDestroy().Key(p.Keys[0]).Group("g").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	p.Produce(t, 0, publishes("end", -10, 0)...)
	start(t, exec, c)
	eventually(t, "the group made", func() bool { return groupInfo(t, p.Client, p.Keys[0], "g") != nil })
	p.Produce(t, 0, publishes("end", 0, 10)...)
	wantSequence(t, numbers(t, waitHistory(t, n, "end", 10)), 0, 10)
}

// TestMethodForms: the method in its own field, {"method","payload"} in
// the payload, a batch and a broadcast all run, in order.
func TestMethodForms(t *testing.T) {
	t.Parallel()
	p := redisstreamtest.Open(t, 1, false)
	n, exec := newNode(t)
	c, _ := p.Consumer("forms", "g", false)
	makeGroup(t, p.Client, p.Keys[0], "g")
	p.Produce(t, 0,
		consumetest.Msg{Method: "publish", Payload: []byte(`{"channel":"forms","data":{"n":0}}`)},
		consumetest.Msg{Payload: []byte(`{"method":"publish","payload":{"channel":"forms","data":{"n":1}}}`)},
		consumetest.Msg{Method: "batch", Payload: []byte(`{"commands":[{"publish":{"channel":"forms","data":{"n":2}}},{"publish":{"channel":"forms","data":{"n":3}}}]}`)},
		consumetest.Msg{Payload: []byte(`{"method":"batch","payload":{"commands":[{"publish":{"channel":"forms","data":{"n":4}}}]}}`)},
		consumetest.Msg{Method: "broadcast", Payload: []byte(`{"channels":["forms","forms2"],"data":{"n":5}}`)},
	)
	r := start(t, exec, c)
	waitHistory(t, n, "forms", 6)
	r.stop()
	wantSequence(t, numbers(t, history(t, n, "forms")), 0, 6)
	wantSequence(t, numbers(t, history(t, n, "forms2")), 5, 6)
}

// TestPublicationDataMode: payloads are published as they are into the
// channels of a field, with the idempotency key, tags and version of
// their fields.
func TestPublicationDataMode(t *testing.T) {
	t.Parallel()
	p := redisstreamtest.Open(t, 1, false)
	n, exec := newNode(t)
	c, _ := p.Consumer("pubmode", "g", true)
	makeGroup(t, p.Client, p.Keys[0], "g")
	pub := func(data string, h ...string) consumetest.Msg {
		m := consumetest.Msg{Payload: []byte(data), Headers: map[string]string{}}
		for i := 0; i < len(h); i += 2 {
			m.Headers[h[i]] = h[i+1]
		}
		return m
	}
	p.Produce(t, 0,
		pub(`{"n":0}`, "centrifugo-channels", "pm", "centrifugo-tag-kind", "first", "centrifugo-tag-x", "y"),
		pub(`{"n":1}`, "centrifugo-channels", "pm", "centrifugo-idempotency-key", "k1"),
		// The same key again: already published, nothing new.
		pub(`{"n":100}`, "centrifugo-channels", "pm", "centrifugo-idempotency-key", "k1"),
		pub(`{"n":2}`, "centrifugo-channels", "pmv", "centrifugo-version", "5", "centrifugo-version-epoch", "e"),
		// An older version than the channel's: dropped.
		pub(`{"n":100}`, "centrifugo-channels", "pmv", "centrifugo-version", "3", "centrifugo-version-epoch", "e"),
		pub(`{"n":3}`, "centrifugo-channels", "pmv", "centrifugo-version", "6", "centrifugo-version-epoch", "e"),
		// Several channels: a broadcast.
		pub(`{"n":4}`, "centrifugo-channels", "pm, pm2", "centrifugo-delta", "false"),
	)
	r := start(t, exec, c)
	waitHistory(t, n, "pm", 3)
	waitHistory(t, n, "pmv", 2)
	r.stop()
	pm := history(t, n, "pm")
	if got := numbers(t, pm); len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 4 {
		t.Errorf("channel pm: %v, want [0 1 4]", got)
	}
	wantSequence(t, numbers(t, history(t, n, "pm2")), 4, 5)
	if got := numbers(t, history(t, n, "pmv")); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Errorf("versioned channel: %v, want [2 3]", got)
	}
	if tags := pm[0].Tags; len(tags) != 2 || tags["kind"] != "first" || tags["x"] != "y" {
		t.Errorf("tags %v, want kind=first x=y", tags)
	}
	if s := r.snapshot(); s.Skipped != 0 || s.Processed != 7 {
		t.Errorf("processed %d, skipped %d; want 7, 0", s.Processed, s.Skipped)
	}
}

// TestMalformed: entries that cannot run are skipped, counted and
// acknowledged, and the entries after them run.
func TestMalformed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		pubMode bool
		bad     []consumetest.Msg
	}{
		{"Commands", false, []consumetest.Msg{
			{Method: "publish", Payload: []byte(`{"channel":`)},
			{Payload: []byte(`{"channel":"x","data":{}}`)},
			{Payload: []byte(`not json`)},
			{Method: "no_such_method", Payload: []byte(`{}`)},
		}},
		{"Publications", true, []consumetest.Msg{
			{Payload: []byte(`{}`), Headers: map[string]string{"centrifugo-channels": "bad", "centrifugo-version": "x"}},
			{Payload: []byte(`{}`), Headers: map[string]string{"centrifugo-channels": "bad", "centrifugo-delta": "maybe"}},
			{Payload: []byte(`{}`)},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := redisstreamtest.Open(t, 1, false)
			n, exec := newNode(t)
			c, _ := p.Consumer("bad", "g", tt.pubMode)
			makeGroup(t, p.Client, p.Keys[0], "g")
			good := func(i int) consumetest.Msg {
				if tt.pubMode {
					return consumetest.Msg{Payload: []byte(`{"n":` + string(rune('0'+i)) + `}`), Headers: map[string]string{"centrifugo-channels": "ok"}}
				}
				return publishMsg("ok", i)
			}
			msgs := []consumetest.Msg{good(0)}
			msgs = append(msgs, tt.bad...)
			msgs = append(msgs, good(1))
			p.Produce(t, 0, msgs...)
			// An entry without the payload field.
			if err := p.Client.Do(context.Background(), p.Client.B().Xadd().Key(p.Keys[0]).Id("*").FieldValue().FieldValue("other", "x").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			p.Produce(t, 0, good(2))
			r := start(t, exec, c)
			waitHistory(t, n, "ok", 3)
			r.stop()
			wantSequence(t, numbers(t, history(t, n, "ok")), 0, 3)
			if s := r.snapshot(); s.Skipped != uint64(len(tt.bad)+1) || s.Processed != 3 {
				t.Errorf("processed %d, skipped %d; want 3, %d", s.Processed, s.Skipped, len(tt.bad)+1)
			}
			if got := pending(t, p.Client, p.Keys[0], "g"); got != 0 {
				t.Errorf("%d entries pending, want 0: skipped entries are acknowledged", got)
			}
		})
	}
}

// TestShutdownLeavesGroup: a stopped consumer has acknowledged its
// entries and is no longer a consumer of the group.
func TestShutdownLeavesGroup(t *testing.T) {
	t.Parallel()
	p := redisstreamtest.Open(t, 2, false)
	n, exec := newNode(t)
	c, _ := p.Consumer("leave", "g", false)
	c.RedisStream.NumWorkers = 3
	for _, k := range p.Keys {
		makeGroup(t, p.Client, k, "g")
	}
	p.Produce(t, 0, publishes("leave", 0, 300)...)
	p.Produce(t, 1, publishes("leave", 300, 600)...)
	r := start(t, exec, c)
	waitHistory(t, n, "leave", 600)
	r.stop()
	// Three readers per stream: each entry once, in no set order.
	got := numbers(t, history(t, n, "leave"))
	slices.Sort(got)
	wantSequence(t, got, 0, 600)
	for _, k := range p.Keys {
		consumers, err := p.Client.Do(context.Background(), p.Client.B().XinfoConsumers().Key(k).Group("g").Build()).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		if len(consumers) != 0 || pending(t, p.Client, k, "g") != 0 {
			t.Errorf("stream %s: %d consumers, %d pending after shutdown; want none", k, len(consumers), pending(t, p.Client, k, "g"))
		}
	}
}

// TestLag: the lag reported is the entries the group has not
// acknowledged, 0 once all ran.
func TestLag(t *testing.T) {
	t.Parallel()
	p := redisstreamtest.Open(t, 2, false)
	n, exec := newNode(t)
	c, _ := p.Consumer("lag", "g", false)
	for _, k := range p.Keys {
		makeGroup(t, p.Client, k, "g")
	}
	p.Produce(t, 0, publishes("lag", 0, 500)...)
	p.Produce(t, 1, publishes("lag2", 0, 500)...)
	r := start(t, exec, c)
	waitHistory(t, n, "lag", 500)
	waitHistory(t, n, "lag2", 500)
	eventually(t, "lag 0", func() bool { return r.snapshot().Lag == 0 })
}

// TestGroupLost: a group that goes missing while the consumer runs (the
// stream deleted, as by a Redis restarted without persistence) is made
// again, and the entries added since run.
func TestGroupLost(t *testing.T) {
	t.Parallel()
	p := redisstreamtest.Open(t, 1, false)
	n, exec := newNode(t)
	c, _ := p.Consumer("lost", "g", false)
	makeGroup(t, p.Client, p.Keys[0], "g")
	p.Produce(t, 0, publishes("lost", 0, 100)...)
	r := start(t, exec, c)
	waitHistory(t, n, "lost", 100)
	if err := p.Client.Do(context.Background(), p.Client.B().Del().Key(p.Keys[0]).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// IDs of a new stream are times in ms: let the new ones come after
	// the last of the old stream.
	time.Sleep(5 * time.Millisecond)
	p.Produce(t, 0, publishes("lost", 100, 200)...)
	waitHistory(t, n, "lost", 200)
	r.stop()
	wantSequence(t, numbers(t, history(t, n, "lost")), 0, 200)
}

// TestNewRefuses: a configuration the consumer cannot run is refused by
// New, naming what is wrong.
func TestNewRefuses(t *testing.T) {
	ok := config.RedisStreamConsumer{Streams: []string{"s"}, ConsumerGroup: "g"}
	for _, tt := range []struct {
		name string
		edit func(c *config.RedisStreamConsumer, rc *redis.Config)
		want string
	}{
		{"NoStreams", func(c *config.RedisStreamConsumer, _ *redis.Config) { c.Streams = nil }, "no streams"},
		{"EmptyStream", func(c *config.RedisStreamConsumer, _ *redis.Config) { c.Streams = []string{"a", ""} }, "empty stream"},
		{"Twice", func(c *config.RedisStreamConsumer, _ *redis.Config) { c.Streams = []string{"a", "a"} }, "twice"},
		{"NoGroup", func(c *config.RedisStreamConsumer, _ *redis.Config) { c.ConsumerGroup = "" }, "consumer_group"},
		{"NegativeWorkers", func(c *config.RedisStreamConsumer, _ *redis.Config) { c.NumWorkers = -1 }, "negative"},
		{"BadAddress", func(_ *config.RedisStreamConsumer, rc *redis.Config) { rc.Addresses = []string{"nowhere"} }, "nowhere"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, rc := ok, redis.Config{}
			c.Streams = append([]string(nil), ok.Streams...)
			tt.edit(&c, &rc)
			d := consume.NewDispatcher("x", "redis_stream", nil, nil)
			_, err := redisstream.New(c, rc, d)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "redisstream: ") {
				t.Errorf("New: %v, want an error about %q", err, tt.want)
			}
		})
	}
}

// TestSuite runs the suite every consumer type passes.
func TestSuite(t *testing.T) {
	t.Parallel()
	consumetest.Run(t, redisstreamtest.Source{})
}
