package gyre_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/websocket"
)

// Broadcast benchmarks measure one node.Publish fanned out to N subscribers
// of one channel, end to end: broker publish, hub lookup, encoding, every
// subscriber's enqueue, and every writer goroutine joining its queue into a
// frame and handing it to the transport. The transport is in memory so that
// 10,000 subscribers need no sockets; everything else is the real engine.
//
// Each iteration waits until every subscriber's transport has received the
// publication, so the writers' work and allocations fall inside the timed
// region. allocs/sub is all allocations of an iteration divided by the
// subscriber count: the engine's goal is that it tends to zero as the
// fan-out grows (a fixed cost per publication, nothing per subscriber).

const benchChannel = "bench"

// benchPayload is a typical small chat message.
var benchPayload = []byte(`{"text":"hello everyone, this is a chat message","user":"user-1234"}`)

// deliverySink counts the messages written by every transport of a
// benchmark and wakes the benchmark when a target is reached. It does not
// allocate, so it adds nothing to the measured allocations.
type deliverySink struct {
	delivered atomic.Int64
	target    atomic.Int64
	closed    atomic.Int64
	reached   chan struct{}
}

func newDeliverySink() *deliverySink {
	return &deliverySink{reached: make(chan struct{}, 1)}
}

func (s *deliverySink) add(n int64) {
	if s.delivered.Add(n) >= s.target.Load() {
		s.signal()
	}
}

func (s *deliverySink) signal() {
	select {
	case s.reached <- struct{}{}:
	default:
	}
}

// waitFor blocks until target messages were written in total. The target is
// stored before delivered is read, so the write that reaches it always sees
// it and signals. It fails when a transport was closed (a slow or dropped
// subscriber would otherwise hang the benchmark).
func (s *deliverySink) waitFor(tb testing.TB, target int64) {
	s.target.Store(target)
	for s.delivered.Load() < target {
		if n := s.closed.Load(); n > 0 {
			tb.Fatalf("%d transports closed while waiting for %d messages (have %d)", n, target, s.delivered.Load())
		}
		<-s.reached
	}
}

// memTransport is a gyre.Transport that keeps nothing: it counts frames,
// bytes and messages, and never blocks.
type memTransport struct {
	proto  protocol.Type
	sink   *deliverySink
	frames atomic.Int64
	bytes  atomic.Int64
	msgs   atomic.Int64
	// last is a copy of the last frame, kept only when keepLast is set.
	keepLast bool
	last     atomic.Pointer[[]byte]
	closedBy atomic.Pointer[gyre.Disconnect]
	// z, when set, makes the transport one with permessage-deflate: it
	// takes whole frames, one message each (WriteFrames).
	z *websocket.Compression
}

func (t *memTransport) Compression() *websocket.Compression { return t.z }

func (t *memTransport) WriteFrames(frames []string) error {
	t.frames.Add(1)
	for _, f := range frames {
		t.bytes.Add(int64(len(f)))
	}
	t.msgs.Add(int64(len(frames)))
	t.sink.add(int64(len(frames)))
	return nil
}

func (t *memTransport) Name() string            { return "memory" }
func (t *memTransport) Protocol() protocol.Type { return t.proto }
func (t *memTransport) Unidirectional() bool    { return false }

func (t *memTransport) WriteFrame(frame []byte) error {
	n := countMessages(t.proto, frame)
	t.frames.Add(1)
	t.bytes.Add(int64(len(frame)))
	t.msgs.Add(n)
	if t.keepLast {
		c := bytes.Clone(frame)
		t.last.Store(&c)
	}
	t.sink.add(n)
	return nil
}

func (t *memTransport) Close(d *gyre.Disconnect) error {
	if t.closedBy.CompareAndSwap(nil, d) {
		t.sink.closed.Add(1)
		t.sink.signal()
	}
	return nil
}

// countMessages counts the framed messages of one frame: JSON separates
// them with '\n' (escaped inside strings, so every newline is a
// separator), protobuf prefixes each with its uvarint length.
func countMessages(t protocol.Type, frame []byte) int64 {
	if t == protocol.TypeJSON {
		return int64(bytes.Count(frame, []byte{'\n'})) + 1
	}
	var n int64
	for len(frame) > 0 {
		l, k := binary.Uvarint(frame)
		if k <= 0 || uint64(len(frame)-k) < l {
			return n
		}
		frame = frame[k+int(l):]
		n++
	}
	return n
}

// broadcastFixture is a running node with subs clients subscribed to
// benchChannel over in-memory transports.
type broadcastFixture struct {
	node       *gyre.Node
	sink       *deliverySink
	transports []*memTransport
	// sent is the number of messages written once setup finished.
	sent int64
}

// fixtureOptions vary the broadcast fixture: keepLast keeps each
// transport's last frame, for the test of the fixture; compact subscribes
// with channel compaction (subscribe flag 1, in a namespace that allows
// it), so that pushes carry the channel's number instead of its name;
// wildcards allows wildcard subscriptions, and pattern subscribes to
// the pattern "*", which the channel matches, instead of the channel.
type fixtureOptions struct {
	keepLast, compact, wildcards, pattern bool
	// positioned: the channel keeps history and its subscribers are
	// positioned (each live publication is checked against their offset).
	positioned bool
	// z gives every subscriber permessage-deflate with these settings.
	z *websocket.Compression
	// tracer is the node's DeliveryTracer.
	tracer gyre.DeliveryTracer
}

func newBroadcastFixture(tb testing.TB, proto protocol.Type, subs int, opts fixtureOptions) *broadcastFixture {
	tb.Helper()
	cfg := gyre.Config{
		Insecure: true,
		// No pings during a run: they would be counted as deliveries.
		PingInterval: time.Hour,
		PongTimeout:  time.Minute,
		Channels: gyre.ChannelConfig{WithoutNamespace: gyre.ChannelOptions{
			AllowChannelCompaction: opts.compact, AllowWildcardSubscriptions: opts.wildcards || opts.pattern,
		}},
		DeliveryTracer: opts.tracer,
	}
	if opts.positioned {
		o := &cfg.Channels.WithoutNamespace
		o.HistorySize, o.HistoryTTL, o.ForcePositioning = 10, time.Minute, true
	}
	node, err := gyre.NewNode(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	var flag int64
	if opts.compact {
		flag = 1
	}
	channel := benchChannel
	if opts.pattern {
		channel = "*"
	}
	sub := &protocol.SubscribeRequest{Channel: channel, Flag: flag}
	return startFixture(tb, node, proto, subs, connectSubscribeFrame(tb, proto, sub), opts)
}

// startFixture runs node and connects subs clients over in-memory
// transports, each sending frame, which must bring it two replies
// (connect and subscribe).
func startFixture(tb testing.TB, node *gyre.Node, proto protocol.Type, subs int, frame []byte, opts fixtureOptions) *broadcastFixture {
	tb.Helper()
	return startFixtureReplies(tb, node, proto, subs, frame, 2, opts)
}

// startFixtureN is startFixture for a frame that brings replies replies.
func startFixtureN(tb testing.TB, node *gyre.Node, proto protocol.Type, subs int, frame []byte, replies int) *broadcastFixture {
	tb.Helper()
	return startFixtureReplies(tb, node, proto, subs, frame, replies, fixtureOptions{})
}

func startFixtureReplies(tb testing.TB, node *gyre.Node, proto protocol.Type, subs int, frame []byte, replies int, opts fixtureOptions) *broadcastFixture {
	tb.Helper()
	if err := node.Run(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := node.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
	})
	f := &broadcastFixture{node: node, sink: newDeliverySink(), transports: make([]*memTransport, subs)}
	for i := range f.transports {
		t := &memTransport{proto: proto, sink: f.sink, keepLast: opts.keepLast, z: opts.z}
		f.transports[i] = t
		c := node.NewClient(context.Background(), t)
		if !c.HandleFrame(frame) {
			tb.Fatalf("client %d: connect and subscribe refused", i)
		}
	}
	// A connect reply and a subscribe reply per client (and more for
	// the frames that ask more).
	f.sent = int64(replies * subs)
	f.sink.waitFor(tb, f.sent)
	return f
}

// connectSubscribeFrame is what a client sends first: connect and subscribe
// batched in one frame.
func connectSubscribeFrame(tb testing.TB, proto protocol.Type, sub *protocol.SubscribeRequest) []byte {
	tb.Helper()
	var msgs [][]byte
	for _, cmd := range []*protocol.Command{
		{Id: 1, Connect: &protocol.ConnectRequest{Name: "bench"}},
		{Id: 2, Subscribe: sub},
	} {
		m, err := protocol.AppendCommand(nil, proto, cmd)
		if err != nil {
			tb.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	return protocol.JoinFrame(nil, proto, msgs)
}

// publish publishes one message and waits until every subscriber got it.
func (f *broadcastFixture) publish(tb testing.TB) {
	if _, err := f.node.Publish(benchChannel, benchPayload); err != nil {
		tb.Fatal(err)
	}
	f.sent += int64(len(f.transports))
	f.sink.waitFor(tb, f.sent)
}

var benchProtocols = []struct {
	name  string
	proto protocol.Type
}{
	{"json", protocol.TypeJSON},
	{"protobuf", protocol.TypeProtobuf},
}

// BenchmarkBroadcast publishes to 1 to 10,000 subscribers; "compact"
// subscribers use channel compaction, whose pushes are encoded once per
// fan-out too; "wildns" subscribers are of a channel in a namespace with
// wildcard subscriptions (and no patterns), "pattern" ones of a pattern
// the channel matches, "positioned" ones positioned subscribers of a
// channel with history.
func BenchmarkBroadcast(b *testing.B) {
	type variant struct {
		name string
		subs int
		opts fixtureOptions
	}
	var variants []variant
	for _, subs := range []int{1, 100, 1000, 10000} {
		variants = append(variants, variant{fmt.Sprintf("subs=%d", subs), subs, fixtureOptions{}})
	}
	variants = append(variants,
		variant{"compact/subs=1000", 1000, fixtureOptions{compact: true}},
		variant{"wildns/subs=1000", 1000, fixtureOptions{wildcards: true}},
		variant{"pattern/subs=1000", 1000, fixtureOptions{pattern: true}},
		variant{"positioned/subs=1000", 1000, fixtureOptions{positioned: true}},
	)
	for _, p := range benchProtocols {
		for _, v := range variants {
			subs := v.subs
			b.Run(p.name+"/"+v.name, func(b *testing.B) {
				f := newBroadcastFixture(b, p.proto, subs, v.opts)
				// Warm the writers, pools and the broker's stream so that
				// the first iterations do not carry setup costs.
				f.publish(b)
				b.ReportAllocs()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for b.Loop() {
					f.publish(b)
				}
				runtime.ReadMemStats(&after)
				ops := float64(b.N)
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/ops/float64(subs), "allocs/sub")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/ops/float64(subs), "ns/sub")
			})
		}
	}
}

// BenchmarkCompressedBroadcast publishes about 1 KB of feed-like JSON
// (feedItem) to 1,000 subscribers without compression and with
// permessage-deflate at level 1: a publication is compressed once for the
// whole fan-out, so ns/sub should barely move. wire-bytes/sub is what one
// subscriber is sent for one publication.
func BenchmarkCompressedBroadcast(b *testing.B) {
	const subs = 1000
	payload := feedItem(7)
	for _, p := range benchProtocols {
		for _, mode := range []struct {
			name string
			z    *websocket.Compression
		}{{"plain", nil}, {"deflate", &websocket.Compression{Level: 1, MinSize: 128}}} {
			b.Run(p.name+"/"+mode.name, func(b *testing.B) {
				f := newBroadcastFixture(b, p.proto, subs, fixtureOptions{z: mode.z})
				publish := func() {
					if _, err := f.node.Publish(benchChannel, payload); err != nil {
						b.Fatal(err)
					}
					f.sent += subs
					f.sink.waitFor(b, f.sent)
				}
				publish()
				var bytesBefore int64
				for _, t := range f.transports {
					bytesBefore += t.bytes.Load()
				}
				b.ReportAllocs()
				for b.Loop() {
					publish()
				}
				var bytesAfter int64
				for _, t := range f.transports {
					bytesAfter += t.bytes.Load()
				}
				ops := float64(b.N)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/ops/subs, "ns/sub")
				b.ReportMetric(float64(bytesAfter-bytesBefore)/ops/subs, "wire-bytes/sub")
			})
		}
	}
}

// BenchmarkBurst publishes 100 publications per operation through a
// Batches to 1,000 subscribers: 100 Publish calls ("publish"), each
// waking every subscriber's writer, or one PublishMany of 100 ("run"),
// whose subscribers are each given the run in one step and woken once.
// ns/delivery is the whole server-side cost of a delivery, writes into
// the in-memory transports included.
func BenchmarkBurst(b *testing.B) {
	const (
		subs = 1000
		per  = 100
	)
	for _, p := range benchProtocols {
		for _, mode := range []string{"publish", "run"} {
			b.Run(p.name+"/"+mode, func(b *testing.B) {
				f := newBroadcastFixture(b, p.proto, subs, fixtureOptions{})
				items := make([]gyre.PublishItem, per)
				publish := func() {
					if mode == "run" {
						for i := range items {
							items[i] = gyre.PublishItem{Channel: benchChannel, Data: benchPayload}
						}
						f.node.PublishMany(items)
						for _, it := range items {
							if it.Err != nil {
								b.Fatal(it.Err)
							}
						}
					} else {
						for range per {
							if _, err := f.node.Publish(benchChannel, benchPayload); err != nil {
								b.Fatal(err)
							}
						}
					}
					f.sent += per * subs
					f.sink.waitFor(b, f.sent)
				}
				publish()
				b.ReportAllocs()
				for b.Loop() {
					publish()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(per*subs), "ns/delivery")
			})
		}
	}
}

// countingTracer is the least a DeliveryTracer can do: count the calls.
type countingTracer struct{ calls atomic.Int64 }

func (t *countingTracer) FannedOut(*gyre.FanOut) { t.calls.Add(1) }

// BenchmarkBroadcastTrace measures what delivery tracing costs a fan-out
// to 1,000 subscribers, of one publication per operation ("publish") or
// of a PublishMany of 100 ("run"): trace=untraced publishes without
// traces on a node without a DeliveryTracer, trace=untraced-tracer the
// same on a node with one, and trace=traced publications that all carry
// one trace, reported to a tracer that only counts (compare them with
// benchstat -col /trace). The untraced variants must cost what
// BenchmarkBroadcast and BenchmarkBurst cost; "traced" adds counters per
// run, nothing per subscriber.
func BenchmarkBroadcastTrace(b *testing.B) {
	const subs, per = 1000, 100
	trace := bytes.Repeat([]byte{1}, 25)
	for _, shape := range []string{"publish", "run"} {
		for _, mode := range []string{"untraced", "untraced-tracer", "traced"} {
			b.Run(shape+"/trace="+mode, func(b *testing.B) {
				tracer := &countingTracer{}
				var opts fixtureOptions
				if mode != "untraced" {
					opts.tracer = tracer
				}
				f := newBroadcastFixture(b, protocol.TypeProtobuf, subs, opts)
				var pubOpts gyre.PublishOptions
				if mode == "traced" {
					pubOpts.Trace = trace
				}
				n := 1
				if shape == "run" {
					n = per
				}
				items := make([]gyre.PublishItem, n)
				publish := func() {
					for i := range items {
						items[i] = gyre.PublishItem{Channel: benchChannel, Data: benchPayload, Options: pubOpts}
					}
					f.node.PublishMany(items)
					for _, it := range items {
						if it.Err != nil {
							b.Fatal(it.Err)
						}
					}
					f.sent += int64(n * subs)
					f.sink.waitFor(b, f.sent)
				}
				publish()
				b.ReportAllocs()
				for b.Loop() {
					publish()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*subs), "ns/delivery")
				// One report per operation: the publications of a run share
				// their trace and are reported together.
				want := int64(0)
				if mode == "traced" {
					want = int64(b.N + 1)
				}
				if got := tracer.calls.Load(); got != want {
					b.Fatalf("the tracer was called %d times, want %d", got, want)
				}
			})
		}
	}
}

// BenchmarkSubscribeCrowded measures one client joining and leaving a
// channel that already has subs subscribers on the node: connect and
// subscribe through HandleFrame, wait for both replies, then close. The
// hub's per-channel subscriber list is copy-on-write in chunks: B/op
// shows the copies, which should not grow with the channel's size.
func BenchmarkSubscribeCrowded(b *testing.B) {
	for _, subs := range []int{0, 1000, 10000} {
		b.Run(fmt.Sprintf("subs=%d", subs), func(b *testing.B) {
			f := newBroadcastFixture(b, protocol.TypeProtobuf, subs, fixtureOptions{})
			frame := connectSubscribeFrame(b, protocol.TypeProtobuf, &protocol.SubscribeRequest{Channel: benchChannel})
			// The joining clients report to a sink of their own, whose
			// count of closed transports is cleared after each close.
			churn := newDeliverySink()
			var sent int64
			b.ReportAllocs()
			for b.Loop() {
				t := &memTransport{proto: protocol.TypeProtobuf, sink: churn}
				c := f.node.NewClient(context.Background(), t)
				if !c.HandleFrame(frame) {
					b.Fatal("connect and subscribe refused")
				}
				sent += 2
				churn.waitFor(b, sent)
				c.Close(nil)
				churn.closed.Store(0)
			}
			if n := f.sink.closed.Load(); n > 0 {
				b.Fatalf("%d subscribers of the crowded channel were closed", n)
			}
		})
	}
}

// TestBroadcastFixture checks that the benchmark measures what it claims:
// every subscriber receives each publication exactly once, as a
// well-formed publication push.
func TestBroadcastFixture(t *testing.T) {
	for _, p := range benchProtocols {
		for _, compact := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/compact=%v", p.name, compact), func(t *testing.T) {
				testBroadcastFixture(t, p.proto, compact)
			})
		}
	}
}

func testBroadcastFixture(t *testing.T, proto protocol.Type, compact bool) {
	const subs, pubs = 50, 3
	f := newBroadcastFixture(t, proto, subs, fixtureOptions{keepLast: true, compact: compact})
	for range pubs {
		f.publish(t)
	}
	for i, tr := range f.transports {
		if got := tr.msgs.Load(); got != 2+pubs {
			t.Fatalf("transport %d: %d messages, want %d", i, got, 2+pubs)
		}
		if d := tr.closedBy.Load(); d != nil {
			t.Fatalf("transport %d closed: %d %s", i, d.Code, d.Reason)
		}
		last := *tr.last.Load()
		replies, err := protocol.DecodeReplies(proto, last, nil)
		if err != nil {
			t.Fatalf("transport %d: decode last frame: %v", i, err)
		}
		r := replies[len(replies)-1]
		named := r.Push.GetChannel() == benchChannel && r.Push.GetId() == 0
		if compact {
			named = r.Push.GetChannel() == "" && r.Push.GetId() > 0
		}
		if r.Push == nil || r.Push.Pub == nil || !named {
			t.Fatalf("transport %d: last message is not a publication in %q (compact %v): %+v", i, benchChannel, compact, r)
		}
		if !bytes.Equal(r.Push.Pub.Data, benchPayload) {
			t.Fatalf("transport %d: data %q, want %q", i, r.Push.Pub.Data, benchPayload)
		}
	}
}

func TestCountMessages(t *testing.T) {
	pb := func(msgs ...string) []byte {
		var out []byte
		for _, m := range msgs {
			out = binary.AppendUvarint(out, uint64(len(m)))
			out = append(out, m...)
		}
		return out
	}
	tests := []struct {
		name  string
		proto protocol.Type
		frame []byte
		want  int64
	}{
		{"json one", protocol.TypeJSON, []byte(`{"id":1}`), 1},
		{"json three", protocol.TypeJSON, []byte("{}\n{\"id\":2}\n{\"push\":{}}"), 3},
		{"json escaped newline", protocol.TypeJSON, []byte(`{"data":"a\nb"}`), 1},
		{"protobuf one", protocol.TypeProtobuf, pb("abc"), 1},
		{"protobuf ping and two", protocol.TypeProtobuf, pb("", "x", "yz"), 3},
		{"protobuf truncated", protocol.TypeProtobuf, pb("abc")[:2], 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := countMessages(tt.proto, tt.frame); got != tt.want {
				t.Fatalf("countMessages = %d, want %d", got, tt.want)
			}
		})
	}
}
