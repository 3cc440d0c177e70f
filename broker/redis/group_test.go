package redis

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/internal/wirepb"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// Tests of grouped publications (group.go).

// plainOpts publishes without history into a channel that takes no
// delta: a plain item.
var plainOpts = broker.PublishOptions{NoDelta: true}

// publishCommands is the number of PUBLISH and SPUBLISH commands the
// Redis servers of cfg have run (INFO commandstats).
func publishCommands(t *testing.T, cfg Config) int {
	t.Helper()
	n := 0
	for _, addr := range append(slices.Clone(cfg.Addresses), cfg.ClusterAddresses...) {
		out, err := cliAt(addr, "info", "commandstats")
		if err != nil {
			t.Fatalf("INFO commandstats on %s: %v: %s", addr, err, out)
		}
		for line := range strings.Lines(string(out)) {
			for _, cmd := range []string{"cmdstat_publish:calls=", "cmdstat_spublish:calls="} {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd); ok {
					calls, _, _ := strings.Cut(rest, ",")
					k, err := strconv.Atoi(calls)
					if err != nil {
						t.Fatalf("INFO commandstats on %s: %q", addr, line)
					}
					n += k
				}
			}
		}
	}
	return n
}

// location is where a channel lives: its Redis and shard.
type location struct{ client, shard int }

func locate(b *Broker, ch string) location {
	ci, si := b.e.locate(ch)
	return location{ci, si}
}

// channelsIn returns n channel names, with prefix, that live where one of
// at does.
func channelsIn(b *Broker, prefix string, n int, at map[location]bool) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		ch := prefix + strconv.Itoa(i)
		if at[locate(b, ch)] {
			out = append(out, ch)
		}
	}
	return out
}

// TestBroadcastGrouped: a PublishMany of one publication into channels
// without history sends one PUBLISH per shard it reaches, and another
// node gets it in each channel it subscribed, once, in order with the
// channel's other publications, and in none it did not subscribe. An
// item with history in the same call still runs the script.
func TestBroadcastGrouped(t *testing.T) {
	for _, s := range setups() {
		t.Run(s.name, func(t *testing.T) {
			cfg := s.cfg(t)
			pub, _ := runBroker(t, cfg)
			sub, ev := runBroker(t, cfg)
			subscribed := make([]string, 30)
			places := make(map[location]bool)
			for i := range subscribed {
				subscribed[i] = "user:" + strconv.Itoa(i)
				places[locate(pub, subscribed[i])] = true
				if err := sub.Subscribe(subscribed[i]); err != nil {
					t.Fatalf("Subscribe: %v", err)
				}
			}
			// Channels nobody subscribed, in shards that carry subscribed
			// ones: what they are sent would arrive before what follows.
			others := channelsIn(pub, "other:", 10, places)
			first := subscribed[0]
			if _, _, err := pub.Publish(first, []byte("before"), plainOpts); err != nil {
				t.Fatalf("Publish: %v", err)
			}

			// One payload for all, as a broadcast publishes it.
			data := []byte("all")
			var items []broker.PublishItem
			for _, ch := range append(slices.Clone(subscribed), others...) {
				items = append(items, broker.PublishItem{Channel: ch, Data: data, Opts: plainOpts})
			}
			items = append(items, broker.PublishItem{Channel: "history:0", Data: data, Opts: broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Minute, NoDelta: true}})
			before := publishCommands(t, cfg)
			pub.PublishMany(items)
			sent := publishCommands(t, cfg) - before
			for i, it := range items {
				if it.Err != nil || it.Suppressed {
					t.Fatalf("item %d (%s): error %v, suppressed %v", i, it.Channel, it.Err, it.Suppressed)
				}
			}
			if sp := items[len(items)-1].Position; sp.Offset != 1 {
				t.Errorf("the item with history has position %+v, want offset 1", sp)
			}
			// One PUBLISH per place reached, and the script's own.
			reached := make(map[location]bool)
			for _, it := range items[:len(items)-1] {
				reached[locate(pub, it.Channel)] = true
			}
			if sent != len(reached)+1 {
				t.Errorf("%d plain items into %d shards and one with history took %d PUBLISH commands, want %d", len(items)-1, len(reached), sent, len(reached)+1)
			}

			if _, _, err := pub.Publish(first, []byte("after"), plainOpts); err != nil {
				t.Fatalf("Publish: %v", err)
			}
			for _, ch := range subscribed[1:] {
				if _, _, err := pub.Publish(ch, []byte("end"), plainOpts); err != nil {
					t.Fatalf("Publish: %v", err)
				}
			}
			got := collect(t, ev, 1+2*len(subscribed))
			for _, ch := range subscribed {
				want := []string{"all", "end"}
				if ch == first {
					want = []string{"before", "all", "after"}
				}
				if !slices.Equal(got[ch], want) {
					t.Errorf("%s: got %q, want %q", ch, got[ch], want)
				}
			}
			for _, ch := range others {
				if len(got[ch]) > 0 {
					t.Errorf("%s, not subscribed: got %q", ch, got[ch])
				}
			}
		})
	}
}

// TestGroupPlain: only plain items without pattern scope that carry the
// same message, into channels no other item of the call publishes to, go
// in a group, one per shard, cut at maxGroup channels.
func TestGroupPlain(t *testing.T) {
	srv := redistest.Start(t).Addr
	b, _ := runBroker(t, Config{Addresses: []string{srv}, PubSubShards: 2})
	opts := plainOpts
	scoped := plainOpts
	scoped.PatternScope = "s:"
	history := broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Minute, NoDelta: true}
	x := []byte("x")
	items := []broker.PublishItem{
		{Channel: "twice", Data: x, Opts: opts},
		{Channel: "scoped", Data: x, Opts: scoped},
		{Channel: "other data", Data: []byte("y"), Opts: opts},
		{Channel: "history", Data: x, Opts: history},
	}
	for i := range maxGroup + 10 {
		items = append(items, broker.PublishItem{Channel: "c" + strconv.Itoa(i), Data: x, Opts: opts})
	}
	items = append(items, broker.PublishItem{Channel: "twice", Data: x, Opts: opts})
	calls := make([]publishCall, len(items))
	enc := encoder{now: time.Now().UnixMilli()}
	for i := range calls {
		calls[i].item = &items[i]
		calls[i].plain = plainItem(items[i].Opts)
		if err := b.prepare(&calls[i], &enc); err != nil {
			t.Fatal(err)
		}
	}
	b.groupPlain(calls)

	grouped := make(map[string]string) // channel -> channel of its group's lead
	perShard := make(map[int]int)      // groups
	for i := range calls {
		c := &calls[i]
		if len(c.group) == 0 {
			continue
		}
		perShard[c.shard]++
		if want := groupName(c.base, c.shard); c.pubsub != want {
			t.Errorf("lead %s publishes to %q, want %q", c.item.Channel, c.pubsub, want)
		}
		if len(c.group)+1 > maxGroup {
			t.Errorf("group of %s has %d channels, more than %d", c.item.Channel, len(c.group)+1, maxGroup)
		}
		var names []string
		for m := range c.members() {
			grouped[m.item.Channel] = c.item.Channel
			if locate(b, m.item.Channel) != locate(b, c.item.Channel) {
				t.Errorf("%s grouped with %s of another shard", m.item.Channel, c.item.Channel)
			}
			names = append(names, m.item.Channel)
		}
		// The message a node receives names exactly the group's channels.
		d := dispatcherFor(t, b, c.shard, names)
		if err := d.addGroup(decodeMessage(t, c.msg)); err != nil {
			t.Fatalf("addGroup: %v", err)
		}
		var delivered []string
		for _, r := range d.runs {
			delivered = append(delivered, r.Channel)
		}
		if !slices.Equal(delivered, names) {
			t.Errorf("group of %s delivers to %d channels, want its %d", c.item.Channel, len(delivered), len(names))
		}
	}
	for _, ch := range []string{"twice", "scoped", "other data", "history"} {
		if _, ok := grouped[ch]; ok {
			t.Errorf("%s was grouped", ch)
		}
	}
	for i := range maxGroup + 10 {
		if _, ok := grouped["c"+strconv.Itoa(i)]; !ok {
			t.Errorf("c%d was not grouped", i)
		}
	}
	if len(perShard) != 2 {
		t.Errorf("groups in %d shards, want 2: %v", len(perShard), perShard)
	}
}

// TestGroupUndecodable: a message on a group channel that cannot be
// decoded reports every channel of the shard lost, and the grouped
// publications after it arrive.
func TestGroupUndecodable(t *testing.T) {
	eachRESP(t, func(t *testing.T, resp2 bool) {
		srv := redistest.Start(t).Addr
		cfg := Config{Addresses: []string{srv}, ForceRESP2: resp2}
		b, ev := runBroker(t, cfg)
		chs := []string{"u:1", "u:2", "u:3"}
		for _, ch := range chs {
			if err := b.Subscribe(ch); err != nil {
				t.Fatal(err)
			}
		}
		group := b.shards[0][0].group
		if out, err := cliPublish(srv, group, "\xff\xff garbage"); err != nil {
			t.Fatalf("PUBLISH: %v: %s", err, out)
		}
		select {
		case lost := <-ev.lost:
			slices.Sort(lost)
			if !slices.Equal(lost, chs) {
				t.Errorf("reported lost %q, want %q", lost, chs)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("gave up waiting for the loss report")
		}
		items := make([]broker.PublishItem, len(chs))
		next := []byte("next")
		for i, ch := range chs {
			items[i] = broker.PublishItem{Channel: ch, Data: next, Opts: plainOpts}
		}
		b.PublishMany(items)
		got := collect(t, ev, len(chs))
		for _, ch := range chs {
			if !slices.Equal(got[ch], []string{"next"}) {
				t.Errorf("%s: got %q after the bad message", ch, got[ch])
			}
		}
	})
}

// TestGroupAfterReconnect: once a pub/sub connection is back, its
// channels are reported lost and grouped publications reach them again.
func TestGroupAfterReconnect(t *testing.T) {
	for _, s := range setups() {
		t.Run(s.name, func(t *testing.T) {
			cfg := s.cfg(t)
			b, ev := runBroker(t, cfg)
			chs := make([]string, 20)
			for i := range chs {
				chs[i] = "r:" + strconv.Itoa(i)
				if err := b.Subscribe(chs[i]); err != nil {
					t.Fatal(err)
				}
			}
			killPubSub(t, cfg)
			lost := make(map[string]bool)
			for len(lost) < len(chs) {
				select {
				case l := <-ev.lost:
					for _, ch := range l {
						lost[ch] = true
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("gave up waiting for loss reports; got %d of %d", len(lost), len(chs))
				}
			}
			items := make([]broker.PublishItem, len(chs))
			back := []byte("back")
			for i, ch := range chs {
				items[i] = broker.PublishItem{Channel: ch, Data: back, Opts: plainOpts}
			}
			b.PublishMany(items)
			for i, it := range items {
				if it.Err != nil {
					t.Fatalf("item %d: %v", i, it.Err)
				}
			}
			got := collect(t, ev, len(chs))
			for _, ch := range chs {
				if !slices.Equal(got[ch], []string{"back"}) {
					t.Errorf("%s: got %q", ch, got[ch])
				}
			}
		})
	}
}

// cliPublish publishes msg to channel with redis-cli, failing when nobody
// received it.
func cliPublish(addr, channel, msg string) ([]byte, error) {
	out, err := cliAt(addr, "publish", channel, msg)
	if err == nil && strings.TrimSpace(string(out)) == "0" {
		err = fmt.Errorf("nobody subscribed %s", channel)
	}
	return out, err
}

// cliAt runs redis-cli with args against the server at addr (host:port,
// with or without redis://).
func cliAt(addr string, args ...string) ([]byte, error) {
	host, port, err := net.SplitHostPort(strings.TrimPrefix(addr, "redis://"))
	if err != nil {
		return nil, err
	}
	return exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
}

// dispatcherFor returns a dispatcher of a shard of b that has subscribed
// channels, apart from b's own.
func dispatcherFor(t *testing.T, b *Broker, shard int, channels []string) *dispatcher {
	t.Helper()
	s := &subShard{b: b, group: groupName(b.e.bases[shard], shard), channels: make(map[string]struct{})}
	for _, ch := range channels {
		s.channels[ch] = struct{}{}
	}
	return &dispatcher{s: s}
}

func decodeMessage(t *testing.T, msg string) *wirepb.Message {
	t.Helper()
	var m wirepb.Message
	if err := m.UnmarshalVT([]byte(msg)); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return &m
}

// TestGroupHandedOverInParts: grouped messages that wait in the queue
// together reach the handler in calls of at most groupFlush publications,
// every channel's once.
func TestGroupHandedOverInParts(t *testing.T) {
	b, h := runHeld(t, Config{Addresses: []string{redistest.Start(t).Addr}})
	const held = "held"
	chs := []string{held}
	for i := range 2*maxGroup + 100 {
		chs = append(chs, "p:"+strconv.Itoa(i))
	}
	for _, ch := range chs {
		if err := b.Subscribe(ch); err != nil {
			t.Fatal(err)
		}
	}
	// The first call, held, carries this one; the broadcast waits
	// behind it.
	if _, _, err := b.Publish(held, []byte("first"), plainOpts); err != nil {
		t.Fatal(err)
	}
	h.waitHeld(t)
	data := []byte("all")
	items := make([]broker.PublishItem, len(chs)-1)
	for i, ch := range chs[1:] {
		items[i] = broker.PublishItem{Channel: ch, Data: data, Opts: plainOpts}
	}
	b.PublishMany(items)
	queue := b.shard(held).queue
	eventually(t, "the grouped messages to wait in the queue", func() bool { return len(queue) >= 3 })
	h.release()
	eventually(t, "every publication", func() bool { return h.logged() >= len(chs) })

	h.mu.Lock()
	defer h.mu.Unlock()
	got := make(map[string]int)
	for i, call := range h.calls {
		pubs := 0
		for _, r := range call {
			got[r.channel] += r.n
			pubs += r.n
		}
		if pubs > groupFlush {
			t.Errorf("call %d carried %d publications, more than %d", i, pubs, groupFlush)
		}
	}
	for _, ch := range chs {
		if got[ch] != 1 {
			t.Errorf("%s: %d publications, want 1", ch, got[ch])
		}
	}
	t.Logf("%d publications in %d calls", len(chs), len(h.calls))
}

// TestGroupChannelRefused: a node whose Redis user may not subscribe the
// group channels does not come up, and its error names the channel and
// Redis's reason.
func TestGroupChannelRefused(t *testing.T) {
	srv := redistest.Start(t)
	if _, err := srv.Cli("ACL", "SETUSER", "nogroup", "on", ">pw", "~*", "+@all", "resetchannels", "&gyretest.control", "&gyretest.c.*", "&gyretest.probe.*"); err != nil {
		t.Fatal(err)
	}
	b := newEngine(t, Config{Addresses: []string{srv.Addr}, User: "nogroup", Password: "pw", ConnectTimeout: 500 * time.Millisecond, IOTimeout: 500 * time.Millisecond}).Broker()
	err := b.Run(newEvents())
	if err == nil {
		t.Fatal("Run succeeded without the group channel")
	}
	if !errors.Is(err, broker.ErrNotAvailable) || !strings.Contains(err.Error(), "gyretest.g.0") || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("Run: %v; want ErrNotAvailable naming gyretest.g.0 and NOPERM", err)
	}
}
