package gyre_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
)

// disconnectRecord is one call of a DisconnectHandler.
type disconnectRecord struct {
	client string
	user   string
	code   uint32
}

// TestSlowReaderDisconnected stops reading on one subscriber while large
// publications keep coming: it is closed as slow (3008), the others get
// everything in order, and memory stays bounded.
func TestSlowReaderDisconnected(t *testing.T) {
	cfg := streamConfig()
	cfg.QueueMaxSize = 256 << 10
	// Offsets, but little history: the heap check measures queues.
	cfg.Channels.Namespaces[0].HistorySize = 10
	disconnects := make(chan disconnectRecord, 16)
	n, url := newTestNodeWith(t, cfg, func(n *gyre.Node) {
		n.OnDisconnect(func(c *gyre.Client, e gyre.DisconnectEvent) {
			select {
			case disconnects <- disconnectRecord{c.ID(), c.UserID(), e.Disconnect.Code}:
			default:
			}
		})
	})
	const channel = "ord:slow"
	good := dialRaw(t, url, protocol.TypeProtobuf)
	good.connect(connToken(t, "good", 0, nil))
	r := good.call(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: channel}})
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	top := r.Subscribe.Offset

	slow := dialRaw(t, url, protocol.TypeJSON)
	// A fixed receive buffer (no autotuning) fills the socket sooner. It
	// stays above the loopback MSS: a smaller window makes the server's
	// kernel wait on zero-window probes once the client reads again.
	if err := slow.nc.(*net.TCPConn).SetReadBuffer(256 << 10); err != nil {
		t.Fatal(err)
	}
	slow.connect(connToken(t, "slow", 0, nil))
	if r := slow.call(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: channel}}); r.Error != nil {
		t.Fatal(r.Error)
	}

	got := make(chan uint64, 16)
	go forwardOffsets(good, channel, got)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	payload := []byte(`"` + strings.Repeat("x", 64<<10) + `"`)
	published := 0
	publish := func() {
		t.Helper()
		if _, err := n.Publish(channel, payload); err != nil {
			t.Fatal(err)
		}
		published++
		select {
		case off, ok := <-got:
			if !ok {
				t.Fatalf("good subscriber's stream ended after %d publications", published-1)
			}
			if want := top + uint64(published); off != want {
				t.Fatalf("good subscriber got offset %d, want %d", off, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("good subscriber did not get publication %d", published)
		}
	}
	// 1,500 publications of 64 KiB: without the queue bound the slow
	// client's backlog alone would be about 96 MiB.
	var gone *disconnectRecord
	for published < 1500 {
		publish()
		select {
		case d := <-disconnects:
			if gone != nil {
				t.Fatalf("second disconnect %+v after %+v", d, *gone)
			}
			gone = &d
		default:
		}
	}
	if gone == nil {
		t.Fatalf("slow client still connected after %d publications of %d bytes", published, len(payload))
	}
	if gone.user != "slow" || gone.code != 3008 {
		t.Fatalf("disconnected %+v, want user slow with 3008", *gone)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if growth := int64(after.HeapAlloc) - int64(before.HeapAlloc); growth > 64<<20 {
		t.Fatalf("heap grew by %d bytes over %d publications", growth, published)
	}
	waitFor(t, "slow client gone", func() bool {
		info := n.Info()[0]
		chans, err := n.Channels(channel)
		return err == nil && info.NumClients == 1 && info.NumSubs == 1 && chans[channel].NumClients == 1
	})
	// The close frame may not make it through a full socket; if it does, it
	// says slow.
	code, err := slow.readUntilClosed(30 * time.Second)
	if err != nil {
		t.Fatalf("reading the slow client's socket: %v", err)
	}
	if code != 0 && code != 3008 {
		t.Fatalf("slow client closed with %d, want 3008", code)
	}
	t.Logf("%d publications of %d bytes; heap growth %d bytes; slow client saw close code %d (0: none)",
		published, len(payload), int64(after.HeapAlloc)-int64(before.HeapAlloc), code)
}

// forwardOffsets reads c and sends the offset of each publication of
// channel to out; it closes out when the stream ends.
func forwardOffsets(c *rawConn, channel string, out chan<- uint64) {
	defer close(out)
	for {
		replies, err := c.readReplies(time.Minute)
		if err != nil {
			return
		}
		for _, r := range replies {
			if r.Push != nil && r.Push.Channel == channel && r.Push.Pub != nil {
				out <- r.Push.Pub.Offset
			}
		}
	}
}

// TestAbruptDisconnects drops a thousand subscribed connections without a
// close frame: the node forgets them all, its goroutines return to where
// they were, and it keeps serving.
func TestAbruptDisconnects(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		const conns = 1000
		n, url := newTestNode(t, b.Config(t, chatConfig()))
		// Let goroutines started on first use exist before the baseline.
		// A subscription too: a broker may start its own on first use
		// (the JetStream store's reply subscription).
		warm := dialRaw(t, url, protocol.TypeJSON)
		warm.connect(connToken(t, "warm", 0, nil))
		if r, err := warm.tryCall(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: "chat:warm"}}); err != nil || r.Error != nil {
			t.Fatalf("warm-up subscribe: %v %v", r, err)
		}
		warm.nc.Close()
		waitFor(t, "warm-up client gone", func() bool { return n.Info()[0].NumClients == 0 })
		baseline := engineGoroutines()

		toks := make([]string, conns)
		for i := range toks {
			toks[i] = connToken(t, "user"+strconv.Itoa(i), 0, nil)
		}
		raws, err := dialConcurrently(url, conns, func(i int, c *rawConn) error {
			r, err := c.tryCall(&protocol.Command{Connect: &protocol.ConnectRequest{Token: toks[i]}})
			if err == nil && r.Error == nil {
				r, err = c.tryCall(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: "chat:drop" + strconv.Itoa(i%10)}})
			}
			if err == nil && r.Error != nil {
				err = fmt.Errorf("error %d %s", r.Error.Code, r.Error.Message)
			}
			return err
		})
		t.Cleanup(func() {
			for _, c := range raws {
				c.nc.Close()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if info := n.Info()[0]; info.NumClients != conns || info.NumSubs != conns {
			t.Fatalf("info with %d connections: %+v", conns, info)
		}
		for i, c := range raws {
			if i%2 == 0 {
				// Half reset the connection instead of closing it.
				_ = c.nc.(*net.TCPConn).SetLinger(0)
			}
			c.nc.Close()
		}

		waitFor(t, "no clients", func() bool {
			info := n.Info()[0]
			return info.NumClients == 0 && info.NumUsers == 0 && info.NumChannels == 0 && info.NumSubs == 0
		})
		for i := range 10 {
			st, err := n.PresenceStats("chat:drop" + strconv.Itoa(i))
			if err != nil || st.NumClients != 0 {
				t.Fatalf("presence of chat:drop%d after the drop: %+v %v", i, st, err)
			}
		}
		waitGoroutines(t, baseline)

		c := dial(t, url, protocol.TypeProtobuf)
		c.connect(connToken(t, "after", 0, nil))
		if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "chat:drop0"}); r.Error != nil {
			t.Fatal(r.Error)
		}
		if _, err := n.Publish("chat:drop0", []byte(`{"still":"here"}`)); err != nil {
			t.Fatal(err)
		}
		if p := c.WaitPubs("chat:drop0", 1)[0]; string(p.Data) != `{"still":"here"}` {
			t.Fatalf("publication %+v", p)
		}
	})
}

// dialConcurrently opens n raw connections, JSON and protobuf in turn,
// and runs setup on each, a few at a time: one after the other, a
// thousand connections spend most of their time waiting for replies.
// It returns the connections opened, for the caller to close, and the
// first error.
func dialConcurrently(url string, n int, setup func(i int, c *rawConn) error) ([]*rawConn, error) {
	conns := make([]*rawConn, n)
	errs := make([]error, n)
	next := make(chan int)
	go func() {
		for i := range n {
			next <- i
		}
		close(next)
	}()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				proto := protocol.TypeJSON
				if i%2 == 1 {
					proto = protocol.TypeProtobuf
				}
				c, err := tryDialRaw(url, proto)
				if err == nil {
					conns[i] = c
					err = setup(i, c)
				}
				if err != nil {
					errs[i] = fmt.Errorf("connection %d: %w", i, err)
				}
			}
		})
	}
	wg.Wait()
	opened := slices.DeleteFunc(conns, func(c *rawConn) bool { return c == nil })
	for _, err := range errs {
		if err != nil {
			return opened, err
		}
	}
	return opened, nil
}

// waitGoroutines polls until no more goroutines run than baseline, and
// dumps them if that does not happen.
func waitGoroutines(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for engineGoroutines() > baseline {
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
			dump := buf.String()
			if len(dump) > 16<<10 {
				dump = dump[:16<<10]
			}
			t.Fatalf("%d goroutines, baseline %d:\n%s", engineGoroutines(), baseline, dump)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// engineGoroutines counts the goroutines running, less those of the Redis
// client library: it opens connections (two goroutines each) as the load
// asks for them and keeps them, which is no leak of the engine's.
func engineGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if len(g) > 0 && !bytes.Contains(g, []byte("github.com/redis/rueidis.")) {
			count++
		}
	}
	return count
}

func TestPingPong(t *testing.T) {
	t.Parallel()
	protocols(t, func(t *testing.T, proto protocol.Type) {
		cfg := chatConfig()
		cfg.PingInterval = 2 * time.Second
		cfg.PongTimeout = time.Second
		n, url := newTestNode(t, cfg)
		answering := dial(t, url, proto)
		silent := dial(t, url, proto, wstest.NoPong())
		res := answering.connect(connToken(t, "answering", 0, nil))
		if res.Ping != 2 || !res.Pong {
			t.Fatalf("connect result %+v, want ping 2 and pong", res)
		}
		silent.connect(connToken(t, "silent", 0, nil))

		ce := silent.WaitClose()
		if ce.Code != 3012 {
			t.Fatalf("silent client closed with %d (%s), want 3012", ce.Code, ce.Reason)
		}
		if silent.Pings() == 0 {
			t.Fatal("silent client closed before any ping")
		}
		waitFor(t, "three pings answered", func() bool {
			if ce := answering.Closed(); ce != nil {
				t.Fatalf("answering client closed: %d %s", ce.Code, ce.Reason)
			}
			return answering.Pings() >= 3
		})
		if r := answering.Call(&protocol.Command{Ping: &protocol.PingRequest{}}); r.Ping == nil {
			t.Fatalf("ping command after pings: %+v", r)
		}
		if info := n.Info()[0]; info.NumClients != 1 {
			t.Fatalf("clients %d, want 1", info.NumClients)
		}
	})
}

func TestExpiryAndRefresh(t *testing.T) {
	t.Parallel()
	newNode := func(t *testing.T) string {
		cfg := chatConfig()
		cfg.ExpiredCloseDelay = 100 * time.Millisecond
		_, url := newTestNode(t, cfg)
		return url
	}
	// connectExpiring connects with a token that expires in about two
	// seconds and returns when it expires.
	connectExpiring := func(t *testing.T, c *testClient) time.Time {
		exp := time.Now().Add(2 * time.Second).Unix()
		res := c.connect(connToken(t, "42", 0, map[string]any{"exp": exp}))
		if !res.Expires || res.Ttl == 0 || res.Ttl > 2 {
			t.Fatalf("connect result %+v, want expires with ttl <= 2", res)
		}
		return time.Unix(exp, 0)
	}
	t.Run("expires without refresh", func(t *testing.T) {
		t.Parallel()
		c := dial(t, newNode(t), protocol.TypeJSON)
		connectExpiring(t, c)
		if ce := c.WaitClose(); ce.Code != 3005 {
			t.Fatalf("close code %d (%s), want 3005", ce.Code, ce.Reason)
		}
	})
	t.Run("refresh before expiry", func(t *testing.T) {
		t.Parallel()
		c := dial(t, newNode(t), protocol.TypeProtobuf)
		exp := connectExpiring(t, c)
		r := c.Call(&protocol.Command{Refresh: &protocol.RefreshRequest{Token: connToken(t, "42", time.Hour, nil)}})
		if r.Error != nil || r.Refresh == nil || !r.Refresh.Expires || r.Refresh.Ttl < 3000 || r.Refresh.Client == "" {
			t.Fatalf("refresh reply %+v", r)
		}
		// Past the old expiry and its grace period the connection lives on.
		time.Sleep(time.Until(exp) + time.Second)
		if r := c.Call(&protocol.Command{Ping: &protocol.PingRequest{}}); r.Ping == nil {
			t.Fatalf("ping after the old expiry: %+v", r)
		}
	})
	t.Run("refresh token of another user", func(t *testing.T) {
		t.Parallel()
		c := dial(t, newNode(t), protocol.TypeJSON)
		connectExpiring(t, c)
		c.Send(&protocol.Command{Id: 2, Refresh: &protocol.RefreshRequest{Token: connToken(t, "43", time.Hour, nil)}})
		if ce := c.WaitClose(); ce.Code != 3500 {
			t.Fatalf("close code %d (%s), want 3500", ce.Code, ce.Reason)
		}
	})
	t.Run("refresh with a bad signature", func(t *testing.T) {
		t.Parallel()
		c := dial(t, newNode(t), protocol.TypeJSON)
		connectExpiring(t, c)
		c.Send(&protocol.Command{Id: 2, Refresh: &protocol.RefreshRequest{Token: connToken(t, "42", time.Hour, nil) + "x"}})
		if ce := c.WaitClose(); ce.Code != 3500 {
			t.Fatalf("close code %d (%s), want 3500", ce.Code, ce.Reason)
		}
	})
	t.Run("refresh with an expired token", func(t *testing.T) {
		t.Parallel()
		c := dial(t, newNode(t), protocol.TypeJSON)
		connectExpiring(t, c)
		old := connToken(t, "42", 0, map[string]any{"exp": time.Now().Add(-time.Minute).Unix()})
		// Closed at once, not answered: the SDKs end a connection for good
		// on a refresh error, and reconnect after 3005.
		r, ce := c.TryCall(&protocol.Command{Refresh: &protocol.RefreshRequest{Token: old}})
		if ce == nil || ce.Code != 3005 {
			t.Fatalf("refresh reply %+v, close %+v; want close 3005", r, ce)
		}
	})
}

func TestServerSideSubscriptions(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url := newTestNode(t, b.Config(t, chatConfig()))
			c := dial(t, url, proto)
			res := c.connect(connToken(t, "42", 0, map[string]any{
				"channels": []string{"news", "chat:srv"},
				"subs":     map[string]any{"chat:more": map[string]any{}},
			}))
			for _, ch := range []string{"news", "chat:srv", "chat:more"} {
				if res.Subs[ch] == nil {
					t.Fatalf("connect result without subs[%q]: %+v", ch, res)
				}
			}
			if sr := res.Subs["chat:srv"]; !sr.Recoverable || sr.Epoch == "" {
				t.Fatalf("subs[chat:srv] %+v, want recoverable with an epoch", sr)
			}
			for _, ch := range []string{"news", "chat:srv", "chat:more"} {
				if _, err := n.Publish(ch, []byte(`{"to":"`+ch+`"}`)); err != nil {
					t.Fatal(err)
				}
				if p := c.WaitPubs(ch, 1)[0]; string(p.Data) != `{"to":"`+ch+`"}` {
					t.Fatalf("publication in %s: %+v", ch, p)
				}
			}
			if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "news"}); r.Error == nil || r.Error.Code != 105 {
				t.Fatalf("subscribe to a server-side channel: %+v, want 105", r)
			}
			if info := n.Info()[0]; info.NumSubs != 3 {
				t.Fatalf("info %+v, want 3 subscriptions", info)
			}
		})
	})
}

func TestNodeSubscribeUnsubscribe(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, br enginetest.Engine) {
		n, url := newTestNode(t, br.Config(t, chatConfig()))
		a := dial(t, url, protocol.TypeJSON)
		aRes := a.connect(connToken(t, "alice", 0, nil))
		b := dial(t, url, protocol.TypeProtobuf)
		b.connect(connToken(t, "alice", 0, nil))
		other := dial(t, url, protocol.TypeJSON)
		other.connect(connToken(t, "bob", 0, nil))

		if err := n.Subscribe("alice", "chat:lib", gyre.ClientFilter{}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []*testClient{a, b} {
			p := c.WaitPush("subscribe push", func(p *protocol.Push) bool { return p.Subscribe != nil })
			if p.Channel != "chat:lib" || !p.Subscribe.Recoverable || p.Subscribe.Epoch == "" {
				t.Fatalf("subscribe push %+v", p)
			}
		}
		if err := n.Subscribe("alice", "nope:x", gyre.ClientFilter{}); !errors.Is(err, gyre.ErrorUnknownChannel) {
			t.Fatalf("subscribe to an unknown namespace: %v", err)
		}
		info := n.Info()[0]
		if info.NumClients != 3 || info.NumUsers != 2 || info.NumChannels != 1 || info.NumSubs != 2 {
			t.Fatalf("info %+v", info)
		}
		for _, pattern := range []string{"", "chat:*", "chat:lib"} {
			chans, err := n.Channels(pattern)
			if err != nil || len(chans) != 1 || chans["chat:lib"].NumClients != 2 {
				t.Fatalf("channels %q: %v %v", pattern, chans, err)
			}
		}
		if chans, err := n.Channels("news*"); err != nil || len(chans) != 0 {
			t.Fatalf("channels news*: %v %v", chans, err)
		}
		if _, err := n.Channels("["); err == nil {
			t.Fatal("channels with a bad pattern: no error")
		}
		if _, err := n.Publish("chat:lib", []byte(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
		a.WaitPubs("chat:lib", 1)
		b.WaitPubs("chat:lib", 1)

		// Only connection a leaves.
		if err := n.Unsubscribe("alice", "chat:lib", gyre.ClientFilter{ClientID: aRes.Client}); err != nil {
			t.Fatal(err)
		}
		p := a.WaitPush("unsubscribe push", func(p *protocol.Push) bool { return p.Unsubscribe != nil })
		if p.Channel != "chat:lib" || p.Unsubscribe.Code != 2000 {
			t.Fatalf("unsubscribe push %+v", p)
		}
		if _, err := n.Publish("chat:lib", []byte(`{"n":2}`)); err != nil {
			t.Fatal(err)
		}
		b.WaitPubs("chat:lib", 2)
		// A sentinel on a channel a still has: anything of chat:lib queued for
		// a would arrive before it.
		if err := n.Subscribe("alice", "sentinel", gyre.ClientFilter{ClientID: aRes.Client}); err != nil {
			t.Fatal(err)
		}
		// The subscribe travels to every node through the broker: on Redis
		// it is done when the push arrives, not when Subscribe returns.
		a.WaitPush("subscribe push of sentinel", func(p *protocol.Push) bool { return p.Subscribe != nil && p.Channel == "sentinel" })
		if _, err := n.Publish("sentinel", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		a.WaitPubs("sentinel", 1)
		if got := len(a.Pubs("chat:lib")); got != 1 {
			t.Fatalf("client a got %d publications of chat:lib after leaving, want 1", got)
		}
		if got := len(other.Pubs("chat:lib")); got != 0 {
			t.Fatalf("bob got %d publications of chat:lib", got)
		}
	})
}

func TestNodeDisconnect(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		n, url := newTestNode(t, b.Config(t, chatConfig()))
		keep := dial(t, url, protocol.TypeJSON)
		keepRes := keep.connect(connToken(t, "bob", 0, nil))
		drop := dial(t, url, protocol.TypeProtobuf)
		drop.connect(connToken(t, "bob", 0, nil))
		bystander := dial(t, url, protocol.TypeJSON)
		bystander.connect(connToken(t, "carol", 0, nil))

		err := n.Disconnect("bob", &gyre.Disconnect{Code: 4501, Reason: "go away"}, gyre.ClientFilter{}, []string{keepRes.Client})
		if err != nil {
			t.Fatal(err)
		}
		if ce := drop.WaitClose(); ce.Code != 4501 || ce.Reason != "go away" {
			t.Fatalf("close %d %q, want 4501 go away", ce.Code, ce.Reason)
		}
		for _, c := range []*testClient{keep, bystander} {
			if r := c.Call(&protocol.Command{Ping: &protocol.PingRequest{}}); r.Ping == nil {
				t.Fatalf("ping: %+v", r)
			}
		}
		if err := n.Disconnect("bob", nil, gyre.ClientFilter{}, nil); err != nil {
			t.Fatal(err)
		}
		if ce := keep.WaitClose(); ce.Code != 3503 {
			t.Fatalf("close %d %q, want 3503", ce.Code, ce.Reason)
		}
		waitFor(t, "bob gone", func() bool { return n.Info()[0].NumClients == 1 })
	})
}

func TestNodeChannelAPI(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		n, url := newTestNode(t, b.Config(t, chatConfig()))
		for _, user := range []string{"alice", "bob", "bob"} {
			c := dial(t, url, protocol.TypeJSON)
			c.connect(connToken(t, user, 0, nil))
			if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "chat:api"}); r.Error != nil {
				t.Fatal(r.Error)
			}
		}
		pres, err := n.Presence("chat:api")
		if err != nil || len(pres) != 3 {
			t.Fatalf("presence: %v %v", pres, err)
		}
		users := map[string]int{}
		for id, ci := range pres {
			if ci.ClientID != id {
				t.Fatalf("presence entry %q has client %q", id, ci.ClientID)
			}
			users[ci.UserID]++
		}
		if users["alice"] != 1 || users["bob"] != 2 {
			t.Fatalf("presence users %v", users)
		}
		if st, err := n.PresenceStats("chat:api"); err != nil || st.NumClients != 3 || st.NumUsers != 2 {
			t.Fatalf("presence stats: %+v %v", st, err)
		}

		var last gyre.PublishResult
		for i := 1; i <= 5; i++ {
			if last, err = n.Publish("chat:api", []byte(`{"n":`+strconv.Itoa(i)+`}`)); err != nil {
				t.Fatal(err)
			}
		}
		pubs, top, err := n.History("chat:api", -1, nil, false)
		if err != nil || len(pubs) != 5 || top != last.StreamPosition {
			t.Fatalf("history: %d publications, top %+v (last publish %+v), %v", len(pubs), top, last, err)
		}
		for i, p := range pubs {
			if p.Offset != top.Offset-4+uint64(i) {
				t.Fatalf("history[%d] offset %d", i, p.Offset)
			}
		}
		pubs, _, err = n.History("chat:api", 2, nil, true)
		if err != nil || len(pubs) != 2 || pubs[0].Offset != top.Offset || pubs[1].Offset != top.Offset-1 {
			t.Fatalf("reverse history: %v %v", pubs, err)
		}
		pubs, _, err = n.History("chat:api", -1, &gyre.StreamPosition{Offset: top.Offset - 2, Epoch: top.Epoch}, false)
		if err != nil || len(pubs) != 2 || pubs[0].Offset != top.Offset-1 {
			t.Fatalf("history since: %v %v", pubs, err)
		}
		if _, _, err := n.History("chat:api", -1, &gyre.StreamPosition{Offset: 1, Epoch: "other"}, false); !errors.Is(err, gyre.ErrorUnrecoverablePosition) {
			t.Fatalf("history since another epoch: %v, want 112", err)
		}
		if pubs, sp, err := n.History("chat:api", 0, nil, false); err != nil || len(pubs) != 0 || sp != top {
			t.Fatalf("history with limit 0: %d publications, %+v, %v", len(pubs), sp, err)
		}
		if err := n.RemoveHistory("chat:api"); err != nil {
			t.Fatal(err)
		}
		if pubs, _, err := n.History("chat:api", -1, nil, false); err != nil || len(pubs) != 0 {
			t.Fatalf("history after remove: %v %v", pubs, err)
		}

		errTests := []struct {
			name string
			call func() error
			want *gyre.Error
		}{
			{"presence without presence", func() error { _, err := n.Presence("news"); return err }, gyre.ErrorNotAvailable},
			{"presence stats without presence", func() error { _, err := n.PresenceStats("news"); return err }, gyre.ErrorNotAvailable},
			{"history without history", func() error { _, _, err := n.History("news", -1, nil, false); return err }, gyre.ErrorNotAvailable},
			{"presence of an unknown namespace", func() error { _, err := n.Presence("nope:x"); return err }, gyre.ErrorUnknownChannel},
			{"history of an unknown namespace", func() error { _, _, err := n.History("nope:x", 1, nil, false); return err }, gyre.ErrorUnknownChannel},
			{"remove history of an unknown namespace", func() error { return n.RemoveHistory("nope:x") }, gyre.ErrorUnknownChannel},
			{"publish into an unknown namespace", func() error { _, err := n.Publish("nope:x", []byte(`{}`)); return err }, gyre.ErrorUnknownChannel},
		}
		for _, tt := range errTests {
			t.Run(tt.name, func(t *testing.T) {
				if err := tt.call(); !errors.Is(err, tt.want) {
					t.Fatalf("error %v, want %v", err, tt.want)
				}
			})
		}
	})
}

func TestConnectingHandler(t *testing.T) {
	tests := []struct {
		name string
		err  error
		// close is the expected close code, or 0 for an error reply.
		close ws.StatusCode
		code  uint32
	}{
		{"refused with a disconnect", &gyre.Disconnect{Code: 4503, Reason: "banned"}, 4503, 0},
		{"refused with a protocol disconnect", gyre.DisconnectPermissionDenied, 3507, 0},
		{"refused with an application error", &gyre.Error{Code: 1000, Message: "not today"}, 0, 1000},
		{"refused with a protocol error", gyre.ErrorUnauthorized, 0, 101},
		{"refused with another error", fmt.Errorf("database down"), 0, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, url := newTestNodeWith(t, chatConfig(), func(n *gyre.Node) {
				n.OnConnecting(func(_ context.Context, e gyre.ConnectingEvent) (gyre.ConnectingReply, error) {
					return gyre.ConnectingReply{}, tt.err
				})
			})
			c := dial(t, url, protocol.TypeJSON)
			if tt.close != 0 {
				c.Send(&protocol.Command{Id: 1, Connect: &protocol.ConnectRequest{Token: connToken(t, "42", 0, nil)}})
				if ce := c.WaitClose(); ce.Code != tt.close {
					t.Fatalf("close %d %q, want %d", ce.Code, ce.Reason, tt.close)
				}
				return
			}
			r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: connToken(t, "42", 0, nil)}})
			if r.Error == nil || r.Error.Code != tt.code {
				t.Fatalf("reply %+v, want error %d", r, tt.code)
			}
			if info := n.Info()[0]; info.NumClients != 0 {
				t.Fatalf("refused client counted: %+v", info)
			}
		})
	}
	t.Run("accepted with credentials, data and channels", func(t *testing.T) {
		events := make(chan gyre.ConnectingEvent, 1)
		n, url := newTestNodeWith(t, chatConfig(), func(n *gyre.Node) {
			n.OnConnecting(func(_ context.Context, e gyre.ConnectingEvent) (gyre.ConnectingReply, error) {
				events <- e
				return gyre.ConnectingReply{
					Credentials: &gyre.Credentials{UserID: "from-handler", Info: []byte(`{"role":"admin"}`)},
					Data:        []byte(`{"welcome":true}`),
					Channels:    []string{"chat:hello"},
				}, nil
			})
		})
		c := dial(t, url, protocol.TypeJSON)
		r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Data: []byte(`{"hi":1}`), Name: "test", Version: "1.2"}})
		if r.Error != nil || string(r.Connect.Data) != `{"welcome":true}` || r.Connect.Subs["chat:hello"] == nil {
			t.Fatalf("connect reply %+v", r)
		}
		seen := <-events
		if seen.Name != "test" || seen.Version != "1.2" || string(seen.Data) != `{"hi":1}` || seen.Transport != "websocket" {
			t.Fatalf("connecting event %+v", seen)
		}
		pres, err := n.Presence("chat:hello")
		if err != nil || len(pres) != 1 {
			t.Fatalf("presence %v %v", pres, err)
		}
		for _, ci := range pres {
			if ci.UserID != "from-handler" || string(ci.ConnInfo) != `{"role":"admin"}` {
				t.Fatalf("presence entry %+v", ci)
			}
		}
	})
}

func TestSubscribeAndPublishHandlers(t *testing.T) {
	n, url := newTestNodeWith(t, chatConfig(), func(n *gyre.Node) {
		n.OnSubscribe(func(_ context.Context, c *gyre.Client, e gyre.SubscribeEvent) (gyre.SubscribeReply, error) {
			if e.Channel == "private:closed" {
				return gyre.SubscribeReply{}, gyre.ErrorPermissionDenied
			}
			return gyre.SubscribeReply{
				ChanInfo: []byte(`{"seat":"` + c.UserID() + `"}`),
				Data:     []byte(`{"joined":"` + e.Channel + `"}`),
			}, nil
		})
		n.OnPublish(func(_ context.Context, c *gyre.Client, e gyre.PublishEvent) (gyre.PublishReply, error) {
			if e.Channel == "chat:readonly" {
				return gyre.PublishReply{}, &gyre.Error{Code: 1403, Message: "read only"}
			}
			return gyre.PublishReply{Data: []byte(`{"by":"` + c.UserID() + `","was":` + string(e.Data) + `}`)}, nil
		})
	})
	a := dial(t, url, protocol.TypeJSON)
	a.connect(connToken(t, "alice", 0, nil))
	b := dial(t, url, protocol.TypeProtobuf)
	b.connect(connToken(t, "bob", 0, nil))
	for _, c := range []*testClient{a, b} {
		r := c.Subscribe(&protocol.SubscribeRequest{Channel: "private:room"})
		if r.Error != nil || string(r.Subscribe.Data) != `{"joined":"private:room"}` {
			t.Fatalf("subscribe through the handler: %+v", r)
		}
	}
	if r := a.Subscribe(&protocol.SubscribeRequest{Channel: "private:closed"}); r.Error == nil || r.Error.Code != 103 {
		t.Fatalf("subscribe refused by the handler: %+v, want 103", r)
	}
	// chat has presence and join/leave, where chan info shows.
	if r := a.Subscribe(&protocol.SubscribeRequest{Channel: "chat:room"}); r.Error != nil {
		t.Fatal(r.Error)
	}
	if r := b.Subscribe(&protocol.SubscribeRequest{Channel: "chat:room"}); r.Error != nil {
		t.Fatal(r.Error)
	}
	join := a.WaitPush("join of bob", func(p *protocol.Push) bool { return p.Join != nil && p.Join.Info.User == "bob" })
	if string(join.Join.Info.ChanInfo) != `{"seat":"bob"}` {
		t.Fatalf("join push %+v", join.Join.Info)
	}
	pres, err := n.Presence("chat:room")
	if err != nil || len(pres) != 2 {
		t.Fatalf("presence %v %v", pres, err)
	}
	for _, ci := range pres {
		if string(ci.ChanInfo) != `{"seat":"`+ci.UserID+`"}` {
			t.Fatalf("presence entry %+v", ci)
		}
	}

	r := a.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "private:room", Data: []byte(`{"text":"hi"}`)}})
	if r.Error != nil {
		t.Fatalf("publish: %+v", r.Error)
	}
	want := `{"by":"alice","was":{"text":"hi"}}`
	for _, c := range []*testClient{a, b} {
		p := c.WaitPubs("private:room", 1)[0]
		if string(p.Data) != want || p.Info == nil || p.Info.User != "alice" || string(p.Info.ChanInfo) != `{"seat":"alice"}` {
			t.Fatalf("publication %+v (info %+v), want data %s from alice", p, p.Info, want)
		}
	}
	r = a.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "chat:readonly", Data: []byte(`{}`)}})
	if r.Error == nil || r.Error.Code != 1403 {
		t.Fatalf("publish refused by the handler: %+v, want 1403", r)
	}
}

// TestDisconnectHandlerOnce ends connections in racing ways (server
// disconnect, peer close, shutdown at once): each is reported once.
func TestDisconnectHandlerOnce(t *testing.T) {
	const clients = 40
	var mu sync.Mutex
	calls := map[string][]uint32{}
	unsubs := map[string]int{}
	n, url := newTestNodeWith(t, chatConfig(), func(n *gyre.Node) {
		n.OnDisconnect(func(c *gyre.Client, e gyre.DisconnectEvent) {
			mu.Lock()
			calls[c.ID()] = append(calls[c.ID()], e.Disconnect.Code)
			mu.Unlock()
		})
		n.OnUnsubscribe(func(c *gyre.Client, e gyre.UnsubscribeEvent) {
			mu.Lock()
			unsubs[c.ID()]++
			mu.Unlock()
		})
	})
	cs := make([]*testClient, clients)
	ids := make([]string, clients)
	for i := range cs {
		proto := protocol.TypeJSON
		if i%2 == 1 {
			proto = protocol.TypeProtobuf
		}
		cs[i] = dial(t, url, proto)
		ids[i] = cs[i].connect(connToken(t, "u"+strconv.Itoa(i%4), 0, nil)).Client
		if r := cs[i].Subscribe(&protocol.SubscribeRequest{Channel: "chat:once"}); r.Error != nil {
			t.Fatal(r.Error)
		}
	}
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_ = n.Disconnect("u"+strconv.Itoa(i%4), &gyre.Disconnect{Code: 4000 + uint32(i), Reason: "race"}, gyre.ClientFilter{ClientID: ids[i]}, nil)
		}()
		go func() {
			defer wg.Done()
			c.Conn().Close()
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	waitFor(t, "every disconnect reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(calls) == clients
	})
	waitFor(t, "no clients", func() bool { return n.Info()[0].NumClients == 0 })
	for _, c := range cs {
		<-c.Done()
	}
	mu.Lock()
	defer mu.Unlock()
	for i, id := range ids {
		if len(calls[id]) != 1 {
			t.Errorf("client %d: disconnect handler called %d times: %v", i, len(calls[id]), calls[id])
		}
		if unsubs[id] != 1 {
			t.Errorf("client %d: unsubscribe handler called %d times", i, unsubs[id])
		}
	}
}

func TestShutdown(t *testing.T) {
	n, url := newTestNode(t, chatConfig())
	cs := []*testClient{dial(t, url, protocol.TypeJSON), dial(t, url, protocol.TypeProtobuf)}
	for i, c := range cs {
		c.connect(connToken(t, "u"+strconv.Itoa(i), 0, nil))
		if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "chat:bye"}); r.Error != nil {
			t.Fatal(r.Error)
		}
	}
	late := dial(t, url, protocol.TypeJSON)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if ce := c.WaitClose(); ce.Code != 3001 {
			t.Fatalf("%s client closed with %d (%s), want 3001", c.Protocol(), ce.Code, ce.Reason)
		}
	}
	// A connection that connects after shutdown is turned away the same way.
	late.Send(&protocol.Command{Id: 1, Connect: &protocol.ConnectRequest{Token: connToken(t, "late", 0, nil)}})
	if ce := late.WaitClose(); ce.Code != 3001 {
		t.Fatalf("connect after shutdown closed with %d (%s), want 3001", ce.Code, ce.Reason)
	}
	if info := n.Info()[0]; info.NumClients != 0 || info.NumSubs != 0 {
		t.Fatalf("info after shutdown %+v", info)
	}
	if err := n.Shutdown(ctx); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
}

// closeRecorder is a transport that reports how it was closed.
type closeRecorder struct{ closed chan *gyre.Disconnect }

func (r *closeRecorder) Name() string            { return "recorder" }
func (r *closeRecorder) Protocol() protocol.Type { return protocol.TypeJSON }
func (r *closeRecorder) Unidirectional() bool    { return false }
func (r *closeRecorder) WriteFrame([]byte) error { return nil }
func (r *closeRecorder) Close(d *gyre.Disconnect) error {
	r.closed <- d
	return nil
}

// TestClientAfterShutdown: a connection whose client is created once
// Shutdown has swept the live clients (its handshake was answered just
// before) closes itself with 3001 at once; Shutdown would otherwise wait
// for it.
func TestClientAfterShutdown(t *testing.T) {
	n, _ := newTestNode(t, chatConfig())
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr := &closeRecorder{closed: make(chan *gyre.Disconnect, 1)}
	n.NewClient(context.Background(), tr)
	select {
	case d := <-tr.closed:
		if d.Code != 3001 {
			t.Fatalf("closed with %d (%s), want 3001", d.Code, d.Reason)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a client created after shutdown is still open")
	}
}
