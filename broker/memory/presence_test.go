package memory

import (
	"fmt"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

func (m *PresenceManager) channelCount() int {
	n := 0
	for i := range m.shards {
		n += m.shards[i].len()
	}
	return n
}

// TestPresenceSweep: expired entries leave, channels left empty are freed,
// and one tick examines at most the configured number of channels.
func TestPresenceSweep(t *testing.T) {
	pm, err := NewPresenceManager(PresenceConfig{Shards: 1, SweepBatch: 2, SweepInterval: time.Hour, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	for i := range 5 {
		ch := fmt.Sprint("ch", i)
		for c := range 3 {
			if err := pm.AddPresence(ch, fmt.Sprint("c", c), &broker.ClientInfo{UserID: "u"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	pm.sweep(time.Now().UnixNano())
	if n := pm.channelCount(); n != 5 {
		t.Fatalf("live channels swept: %d left", n)
	}
	if err := pm.RemovePresence("ch0", "c0", "u"); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour).UnixNano()
	for _, want := range []int{3, 1, 0} {
		pm.sweep(later)
		if n := pm.channelCount(); n != want {
			t.Fatalf("after a tick: %d channels, want %d", n, want)
		}
	}
}

// TestPresenceRefreshExtends: AddPresence restarts the entry's TTL.
func TestPresenceRefreshExtends(t *testing.T) {
	pm, err := NewPresenceManager(PresenceConfig{Shards: 1, SweepInterval: time.Hour, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	if err := pm.AddPresence("ch", "c", nil); err != nil {
		t.Fatal(err)
	}
	sh := pm.shard("ch")
	first := sh.channels["ch"].clients["c"].expires
	time.Sleep(2 * time.Millisecond) // the clock moves on
	if err := pm.AddPresence("ch", "c", nil); err != nil {
		t.Fatal(err)
	}
	e := sh.channels["ch"].clients["c"]
	if e.expires <= first {
		t.Errorf("refresh kept expiry %d, first was %d", e.expires, first)
	}
	if e.info.ClientID != "c" {
		t.Errorf("nil info stored as %+v, want the client ID", e.info)
	}
}
