package redis

import (
	"errors"
	"reflect"
	"testing"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/brokertest"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

func TestStore(t *testing.T) {
	for _, s := range setups() {
		t.Run(s.name, func(t *testing.T) {
			cfg := s.cfg(t)
			brokertest.RunStoreTests(t, func(t *testing.T) broker.Store {
				return newEngine(t, cfg).Store()
			})
		})
	}
}

// TestStoreSharesStreams: the Store appends to the streams the Broker
// publishes into (offsets, history and delta base are one), and sends
// nothing over pub/sub.
func TestStoreSharesStreams(t *testing.T) {
	e := newEngine(t, Config{Addresses: []string{redistest.Start(t).Addr}})
	b, ev := e.Broker(), newEvents()
	if err := b.Run(ev); err != nil {
		t.Fatalf("Run: %v", err)
	}
	const ch = "shared"
	if err := b.Subscribe(ch); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	delta := history
	delta.UseDelta = true
	s := e.Store()
	appendOne := func(data string) broker.StoreItem {
		t.Helper()
		it := []broker.StoreItem{{PublishItem: broker.PublishItem{Channel: ch, Data: []byte(data), Opts: delta}}}
		s.Append(it)
		if it[0].Err != nil {
			t.Fatalf("Append(%q): %v", data, it[0].Err)
		}
		return it[0]
	}
	appendOne("a")
	second := appendOne("b")

	sp, _, err := b.Publish(ch, []byte("published"), delta)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if sp.Offset != second.Position.Offset+1 || sp.Epoch != second.Position.Epoch {
		t.Errorf("publish after two appends at %+v, want the offset after %+v", sp, second.Position)
	}
	d := ev.next(t) // the first delivery: the appends sent nothing
	if string(d.pub.Data) != "published" || d.prev == nil || string(d.prev.Data) != "b" {
		t.Fatalf("first delivery %q with prev %v, want the publish with the last append as prev", d.pub.Data, d.prev)
	}
	if last := appendOne("c"); last.Prev == nil || string(last.Prev.Data) != "published" || last.Prev.Offset != sp.Offset {
		t.Errorf("append after a publish has prev %+v, want the publish at %d", last.Prev, sp.Offset)
	}
	pubs, _, err := b.History(ch, broker.HistoryOptions{Filter: broker.HistoryFilter{Limit: -1}})
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	var got []string
	for _, p := range pubs {
		got = append(got, string(p.Data))
	}
	if want := []string{"a", "b", "published", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
}

// TestStoreClose: closing the Store leaves the Engine's connections to
// its other parts, and the Engine closes after it without error (the
// cleanup of newEngine checks).
func TestStoreClose(t *testing.T) {
	e := newEngine(t, Config{Addresses: []string{redistest.Start(t).Addr}})
	s := e.Store()
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if _, _, err := s.History("ch", broker.HistoryOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("History after Close: %v, want ErrClosed", err)
	}
	if err := s.RemoveHistory("ch"); !errors.Is(err, ErrClosed) {
		t.Errorf("RemoveHistory after Close: %v, want ErrClosed", err)
	}
	if err := e.PresenceManager().AddPresence("ch", "c1", nil); err != nil {
		t.Errorf("AddPresence after the Store closed: %v", err)
	}
	if _, _, err := e.Broker().History("ch", broker.HistoryOptions{}); err != nil {
		t.Errorf("Broker.History after the Store closed: %v", err)
	}
}

// TestStoreHealthy: the store reports a Redis it cannot reach, and is
// healthy again once it is back.
func TestStoreHealthy(t *testing.T) {
	srv := redistest.Start(t)
	s := newEngine(t, Config{Addresses: []string{srv.Addr}}).Store()
	if err := s.Healthy(); err != nil {
		t.Fatalf("Healthy: %v", err)
	}
	srv.Stop()
	if err := s.Healthy(); !errors.Is(err, broker.ErrNotAvailable) {
		t.Errorf("Healthy with Redis stopped: %v, want ErrNotAvailable", err)
	}
	srv.Restart()
	eventually(t, "the store to be healthy again", func() bool { return s.Healthy() == nil })
}
