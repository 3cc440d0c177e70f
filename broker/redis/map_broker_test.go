package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/maptest"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// mapSetups are the Redis shapes the map tests run on.
func mapSetups() []setup {
	var out []setup
	for _, s := range setups() {
		if s.name != "SingleRESP2" {
			out = append(out, s)
		}
	}
	return out
}

func TestMapBroker(t *testing.T) {
	for _, s := range mapSetups() {
		t.Run(s.name, func(t *testing.T) {
			cfg := s.cfg(t)
			cfg.Prefix = "gyretest"
			maptest.Run(t, func(t *testing.T) broker.MapBroker {
				m, err := NewMapBroker(cfg)
				if err != nil {
					t.Fatalf("NewMapBroker: %v", err)
				}
				return m
			}, maptest.SharedBackend(), maptest.OrderedPages())
		})
	}
}

// runMap returns a running MapBroker of an engine on cfg, and what it
// delivers.
func runMap(t testing.TB, cfg Config) (*MapBroker, *events) {
	t.Helper()
	m := newEngine(t, cfg).MapBroker()
	ev := newEvents()
	if err := m.Run(ev); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return m, ev
}

var mapPersistent = broker.MapOptions{Mode: broker.MapModePersistent, StreamSize: 100, StreamTTL: time.Minute}

// TestMapBrokerCursor checks what a state cursor ties itself to: its
// channel (another's is ErrBadCursor) and the channel's epoch (a cursor
// from before Clear is ErrUnrecoverablePosition, the state it paged
// through being gone).
func TestMapBrokerCursor(t *testing.T) {
	m, _ := runMap(t, Config{Addresses: []string{mapSetups()[0].cfg(t).Addresses[0]}})
	ctx := context.Background()
	const ch = "cursor"
	for i := range 300 {
		if _, err := m.Publish(ctx, ch, "k"+strconv.Itoa(i), broker.MapPublishOptions{Map: mapPersistent}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(channel, cursor string) (broker.MapStateResult, error) {
		return m.ReadState(ctx, channel, broker.MapStateOptions{Map: mapPersistent, Cursor: cursor, Limit: 10})
	}
	first, err := read(ch, "")
	if err != nil || first.Cursor == "" {
		t.Fatalf("first page: %+v, %v; want a cursor", first, err)
	}
	for _, c := range []string{
		encodeMapCursor("other", first.Position.Epoch, "(k1"),
		encodeMapCursor(ch, first.Position.Epoch, "[k1"),
		encodeMapCursor(ch, "", "(k1"),
	} {
		if _, err := read(ch, c); !errors.Is(err, broker.ErrBadCursor) {
			t.Errorf("cursor %q: %v, want ErrBadCursor", c, err)
		}
	}
	if _, err := read(ch, first.Cursor); err != nil {
		t.Fatalf("second page: %v", err)
	}
	if err := m.Clear(ctx, ch); err != nil {
		t.Fatal(err)
	}
	if _, err := read(ch, first.Cursor); !errors.Is(err, broker.ErrUnrecoverablePosition) {
		t.Fatalf("cursor from before Clear: %v, want ErrUnrecoverablePosition", err)
	}
}

// TestMapBrokerExpiryBatches lets more keys expire at once than one
// script call and one look at the index take, on two nodes: each key is
// removed once, every change delivered to both in offset order.
func TestMapBrokerExpiryBatches(t *testing.T) {
	for _, s := range mapSetups() {
		t.Run(s.name, func(t *testing.T) {
			cfg := s.cfg(t)
			m1, ev1 := runMap(t, cfg)
			m2, ev2 := runMap(t, cfg)
			mo := broker.MapOptions{Mode: broker.MapModeEphemeral, KeyTTL: 300 * time.Millisecond}
			const channels, keys = mapExpireChannels + 20, 3
			const bigKeys = 2*mapExpireBatch + 50
			ctx := context.Background()
			want := make(map[string]int) // changes per channel
			for c := range channels {
				ch := "exp" + strconv.Itoa(c)
				n := keys
				if c == 0 {
					n = bigKeys
				}
				for _, m := range []*MapBroker{m1, m2} {
					if err := m.Subscribe(ch); err != nil {
						t.Fatal(err)
					}
				}
				for k := range n {
					if _, err := m1.Publish(ctx, ch, "k"+strconv.Itoa(k), broker.MapPublishOptions{Map: mo}); err != nil {
						t.Fatal(err)
					}
				}
				want[ch] = 2 * n
			}
			total := 0
			for _, n := range want {
				total += n
			}
			for i, ev := range []*events{ev1, ev2} {
				next := make(map[string]uint64)
				removed := make(map[string]bool)
				for range total {
					d := ev.next(t)
					if next[d.channel]++; d.sp.Offset != next[d.channel] {
						t.Fatalf("node %d: %s change at %d, want %d", i+1, d.channel, d.sp.Offset, next[d.channel])
					}
					if d.pub.Removed {
						id := d.channel + "/" + d.pub.Key
						if removed[id] {
							t.Fatalf("node %d: %s removed twice", i+1, id)
						}
						removed[id] = true
					}
				}
				if len(removed) != total/2 {
					t.Fatalf("node %d: %d removals, want %d", i+1, len(removed), total/2)
				}
			}
			for ch := range want {
				if st, err := m2.Stats(ctx, ch); err != nil || st.NumKeys != 0 {
					t.Fatalf("%s after expiry: %+v, %v", ch, st, err)
				}
			}
		})
	}
}

// TestMapBrokerSubscriptionLost drops the pub/sub connections: the
// subscribed map channels are reported lost once subscribed again, and
// their changes flow after.
func TestMapBrokerSubscriptionLost(t *testing.T) {
	for _, s := range mapSetups() {
		t.Run(s.name, func(t *testing.T) {
			cfg := s.cfg(t)
			m, ev := runMap(t, cfg)
			chans := []string{"lost1", "lost2", "lost3"}
			for _, ch := range chans {
				if err := m.Subscribe(ch); err != nil {
					t.Fatal(err)
				}
			}
			killPubSub(t, cfg)
			reported := make(map[string]bool)
			for len(reported) < len(chans) {
				select {
				case lost := <-ev.lost:
					for _, ch := range lost {
						reported[ch] = true
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("reported lost: %v, want %v", reported, chans)
				}
			}
			for _, ch := range chans {
				if !reported[ch] {
					t.Fatalf("reported %v, want %v", reported, chans)
				}
			}
			eventually(t, "map pub/sub back", func() bool { return m.Healthy() == nil })
			r, err := m.Publish(context.Background(), chans[0], "k", broker.MapPublishOptions{Map: mapPersistent})
			if err != nil {
				t.Fatal(err)
			}
			if d := ev.next(t); d.channel != chans[0] || d.sp != r.Position {
				t.Fatalf("after the loss got %s at %v, want %s at %v", d.channel, d.sp, chans[0], r.Position)
			}
		})
	}
}

// TestMapBrokerClose: a MapBroker of NewMapBroker closes its connections;
// one of Engine.MapBroker is closed with the Engine, and keeps the
// connections open while the Engine's other parts are closed.
func TestMapBrokerClose(t *testing.T) {
	cfg := Config{Addresses: []string{mapSetups()[0].cfg(t).Addresses[0]}, Prefix: "gyretest"}
	ctx := context.Background()
	publish := func(m *MapBroker) error {
		_, err := m.Publish(ctx, "c", "k", broker.MapPublishOptions{Map: mapPersistent})
		return err
	}

	own, err := NewMapBroker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := own.Run(newEvents()); err != nil {
		t.Fatal(err)
	}
	if err := own.Close(); err != nil {
		t.Fatal(err)
	}
	if err := publish(own); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Close: %v, want ErrClosed", err)
	}
	if err := own.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	shared := e.MapBroker()
	if e.MapBroker() != shared {
		t.Fatal("Engine.MapBroker made a second MapBroker")
	}
	_ = e.Broker().Close()
	_ = e.PresenceManager().Close()
	if err := publish(shared); err != nil {
		t.Fatalf("Publish with the engine's other parts closed: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := publish(shared); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Engine.Close: %v, want ErrClosed", err)
	}
}

// TestMapBrokerRestartEpoch restarts a Redis whose data survives. With
// Config.DurableRestarts a map channel keeps its epoch; without it the
// next change starts a new epoch, as a stream's does (TestRestartEpoch):
// a restart that may lose changes must not let an offset be handed out
// twice in one epoch. The state stays either way.
func TestMapBrokerRestartEpoch(t *testing.T) {
	for _, durable := range []bool{true, false} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
			m, _ := runMap(t, Config{Addresses: []string{srv.Addr}, DurableRestarts: durable, IOTimeout: time.Second})
			ctx := context.Background()
			const ch = "restart-epoch"
			before, err := m.Publish(ctx, ch, "before", broker.MapPublishOptions{Map: mapPersistent, Data: []byte("1")})
			if err != nil {
				t.Fatal(err)
			}
			srv.Kill()
			srv.Restart()
			var after broker.MapUpdateResult
			eventually(t, "a write after the restart", func() bool {
				after, err = m.Publish(ctx, ch, "after", broker.MapPublishOptions{Map: mapPersistent, Data: []byte("2")})
				return err == nil
			})
			if after.Position.Offset != before.Position.Offset+1 {
				t.Fatalf("first write after the restart at %+v, want offset %d", after.Position, before.Position.Offset+1)
			}
			if sameEpoch := after.Position.Epoch == before.Position.Epoch; sameEpoch != durable {
				t.Fatalf("epoch %q before the restart, %q after; durable restarts %v", before.Position.Epoch, after.Position.Epoch, durable)
			}
			st, err := m.ReadState(ctx, ch, broker.MapStateOptions{Map: mapPersistent, Limit: -1})
			if err != nil || len(st.Entries) != 2 || st.Position != after.Position {
				t.Fatalf("state after the restart: %+v, %v; want both keys at %+v", st, err, after.Position)
			}
		})
	}
}

// TestMapBrokerSentinelFailover kills the master of a Sentinel setup: the
// subscribed map channel is reported lost once its pub/sub is on the new
// master, whose first change of the channel starts a new epoch (a
// promoted replica may lack the last changes), and changes flow again.
func TestMapBrokerSentinelFailover(t *testing.T) {
	s := redistest.StartSentinel(t)
	m, ev := runMap(t, Config{SentinelAddresses: s.Addrs(), SentinelMasterName: redistest.MasterName, IOTimeout: time.Second})
	ctx := context.Background()
	const ch = "failover"
	if err := m.Subscribe(ch); err != nil {
		t.Fatal(err)
	}
	before, err := m.Publish(ctx, ch, "a", broker.MapPublishOptions{Map: mapPersistent})
	if err != nil {
		t.Fatal(err)
	}
	if d := ev.next(t); d.sp != before.Position {
		t.Fatalf("delivered at %v, want %v", d.sp, before.Position)
	}

	s.Master.Kill()
	s.WaitMaster(t, s.Replica.Addr)
	waitLost(t, ev, ch)
	var after broker.MapUpdateResult
	eventually(t, "a write on the new master", func() bool {
		after, err = m.Publish(ctx, ch, "b", broker.MapPublishOptions{Map: mapPersistent})
		return err == nil
	})
	if after.Position.Epoch == before.Position.Epoch {
		t.Fatalf("the channel kept epoch %q across a failover", before.Position.Epoch)
	}
	for d := ev.next(t); d.pub.Key != "b"; d = ev.next(t) {
	}
	eventually(t, "Healthy after the failover", func() bool { return m.Healthy() == nil })
}
