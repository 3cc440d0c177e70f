package enginetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
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

// TestIsolation: nodes of one group of Same share history; a node of
// Config, or of another group, or of the same group in another test,
// sees none of it.
func TestIsolation(t *testing.T) {
	Each(t, func(t *testing.T, e Engine) {
		alone := runNode(t, e.Config(t, historyConfig()))
		if _, err := alone.Publish("news", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if n := historyLen(t, alone); n != 1 {
			t.Fatalf("the publishing node has %d publications, want 1", n)
		}
		if !e.Multinode() {
			return
		}
		a := runNode(t, e.Same(t, historyConfig(), "g"))
		b := runNode(t, e.Same(t, historyConfig(), "g"))
		if _, err := a.Publish("news", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if n := historyLen(t, b); n != 1 {
			t.Fatalf("a node of the same group has %d publications, want 1", n)
		}
		for name, cfg := range map[string]gyre.Config{
			"Config":      e.Config(t, historyConfig()),
			"other group": e.Same(t, historyConfig(), "h"),
		} {
			if n := historyLen(t, runNode(t, cfg)); n != 0 {
				t.Errorf("a node of %s has %d publications, want 0", name, n)
			}
		}
		t.Run("subtest", func(t *testing.T) {
			if n := historyLen(t, runNode(t, e.Same(t, historyConfig(), "g"))); n != 0 {
				t.Errorf("group g of a subtest has %d publications, want 0", n)
			}
		})
	})
}

func historyConfig() gyre.Config {
	return gyre.Config{Channels: gyre.ChannelConfig{WithoutNamespace: gyre.ChannelOptions{HistorySize: 10, HistoryTTL: time.Minute}}}
}

func runNode(t *testing.T, cfg gyre.Config) *gyre.Node {
	t.Helper()
	n, err := gyre.NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	return n
}

func historyLen(t *testing.T, n *gyre.Node) int {
	t.Helper()
	pubs, _, err := n.History("news", -1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return len(pubs)
}
