package enginetest

import (
	"slices"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker"
)

func TestMain(m *testing.M) { Main(m) }

func TestSelected(t *testing.T) {
	all, err := selected("")
	if err != nil || len(all) != len(variants) {
		t.Fatalf("no list: %d variants, %v; want all %d", len(all), err, len(variants))
	}
	some, err := selected(" redis-cluster,memory,redis-cluster ")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range some {
		got = append(got, v.name)
	}
	if !slices.Equal(got, []string{"redis-cluster", "memory"}) {
		t.Fatalf("selected %v", got)
	}
	if _, err := selected("memory,mem"); err == nil {
		t.Fatal("an unknown name was accepted")
	}
}

// TestIsolation: engines of one group of Same share streams; an engine
// of Config, or of another group, or of the same group in another test,
// has none of them.
func TestIsolation(t *testing.T) {
	Each(t, func(t *testing.T, e Engine) {
		if !e.Multinode() {
			if cfg := e.Config(t, gyre.Config{}); cfg.Broker != nil || cfg.PresenceManager != nil {
				t.Fatalf("%s sets a broker: the node would not make its own", e.Name())
			}
			return
		}
		a := e.Same(t, gyre.Config{}, "g").Broker
		if _, _, err := a.Publish("news", []byte(`{}`), broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if top := streamTop(t, e.Same(t, gyre.Config{}, "g")); top != 1 {
			t.Fatalf("an engine of the same group has the stream at %d, want 1", top)
		}
		for name, cfg := range map[string]gyre.Config{
			"Config":      e.Config(t, gyre.Config{}),
			"other group": e.Same(t, gyre.Config{}, "h"),
		} {
			if top := streamTop(t, cfg); top != 0 {
				t.Errorf("an engine of %s has the stream at %d, want 0", name, top)
			}
		}
		t.Run("subtest", func(t *testing.T) {
			if top := streamTop(t, e.Same(t, gyre.Config{}, "g")); top != 0 {
				t.Errorf("group g of a subtest has the stream at %d, want 0", top)
			}
		})
	})
}

// streamTop is the offset of the last publication of "news" in cfg's
// broker.
func streamTop(t *testing.T, cfg gyre.Config) uint64 {
	t.Helper()
	_, top, err := cfg.Broker.History("news", broker.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return top.Offset
}
