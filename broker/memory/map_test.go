package memory_test

import (
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/maptest"
	"github.com/gyrehq/gyre/broker/memory"
)

func newMapBroker(t testing.TB, cfg memory.MapConfig) *memory.MapBroker {
	t.Helper()
	b, err := memory.NewMapBroker(cfg)
	if err != nil {
		t.Fatalf("NewMapBroker: %v", err)
	}
	return b
}

func TestMapBroker(t *testing.T) {
	maptest.Run(t, func(t *testing.T) broker.MapBroker {
		return newMapBroker(t, memory.MapConfig{SweepInterval: 20 * time.Millisecond})
	}, maptest.OrderedPages())
}

// TestMapBrokerSweeping runs the suite with a sweep so frequent that it
// races every call, over few shards so that channels share them.
func TestMapBrokerSweeping(t *testing.T) {
	maptest.Run(t, func(t *testing.T) broker.MapBroker {
		return newMapBroker(t, memory.MapConfig{SweepInterval: time.Millisecond, Shards: 2, IdleTTL: time.Millisecond})
	}, maptest.OrderedPages())
}

func BenchmarkMapBroker(b *testing.B) {
	maptest.BenchmarkMapBroker(b, func(b *testing.B) broker.MapBroker { return newMapBroker(b, memory.MapConfig{}) })
}
