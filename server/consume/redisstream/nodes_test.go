package redisstream_test

import (
	"slices"
	"testing"

	"github.com/redis/rueidis"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume/redisstream/redisstreamtest"
)

// TestTwoNodes: two nodes in one group share the entries of a stream:
// each entry runs once, on one of them, and each node runs its entries in
// stream order.
func TestTwoNodes(t *testing.T) {
	t.Parallel()
	p := redisstreamtest.Open(t, 1, false)
	makeGroup(t, p.Client, p.Keys[0], "g")
	n1, exec1 := newNode(t)
	n2, exec2 := newNode(t)
	c, _ := p.Consumer("two", "g", false)
	r1 := start(t, exec1, c)
	r2 := start(t, exec2, c)
	const total = 5000
	for i := 0; i < total; i += 100 {
		p.Produce(t, 0, publishes("two", i, i+100)...)
	}
	eventually(t, "every entry run", func() bool {
		return len(history(t, n1, "two"))+len(history(t, n2, "two")) >= total
	})
	r1.stop()
	r2.stop()
	got1, got2 := numbers(t, history(t, n1, "two")), numbers(t, history(t, n2, "two"))
	t.Logf("node 1 ran %d entries, node 2 %d", len(got1), len(got2))
	for i, got := range [][]int{got1, got2} {
		if !slices.IsSorted(got) {
			t.Errorf("node %d ran its entries out of stream order", i+1)
		}
	}
	all := slices.Concat(got1, got2)
	slices.Sort(all)
	wantSequence(t, all, 0, total)
}

// TestSeveralAddresses: with several Redis addresses every stream is read
// on each of them.
func TestSeveralAddresses(t *testing.T) {
	t.Parallel()
	p1 := redisstreamtest.Open(t, 1, false)
	p2 := redisstreamtest.Open(t, 1, true)
	key := p1.Keys[0]
	makeGroup(t, p1.Client, key, "g")
	makeGroup(t, p2.Client, key, "g")
	n, exec := newNode(t)
	c, _ := p1.Consumer("shards", "g", false)
	c.RedisStream.Address = []string{p1.Server.Addr, "redis://" + p2.Server.Addr}
	redisstreamtest.Add(t, p1.Client, key, publishes("first", 0, 300)...)
	redisstreamtest.Add(t, p2.Client, key, publishes("second", 0, 300)...)
	r := start(t, exec, c)
	waitHistory(t, n, "first", 300)
	waitHistory(t, n, "second", 300)
	r.stop()
	wantSequence(t, numbers(t, history(t, n, "first")), 0, 300)
	wantSequence(t, numbers(t, history(t, n, "second")), 0, 300)
}

// TestCluster: streams on the nodes of a Redis Cluster are read in
// order.
func TestCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Addrs(), DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	// Keys of different slots, so of different nodes in all likelihood.
	keys := []string{"cluster-a", "cluster-b", "cluster-c", "cluster-d"}
	for _, k := range keys {
		makeGroup(t, client, k, "g")
		redisstreamtest.Add(t, client, k, publishes(k, 0, 500)...)
	}
	n, exec := newNode(t)
	r := start(t, exec, config.Consumer{
		Name: "cluster", Enabled: true, Type: "redis_stream",
		RedisStream: config.RedisStreamConsumer{
			Redis:         config.Redis{ClusterAddress: cl.Addrs()},
			Streams:       keys,
			ConsumerGroup: "g", PayloadValue: "payload", MethodValue: "method",
		},
	})
	for _, k := range keys {
		redisstreamtest.Add(t, client, k, publishes(k, 500, 1000)...)
	}
	for _, k := range keys {
		waitHistory(t, n, k, 1000)
	}
	r.stop()
	for _, k := range keys {
		wantSequence(t, numbers(t, history(t, n, k)), 0, 1000)
		if got := pending(t, client, k, "g"); got != 0 {
			t.Errorf("stream %s: %d entries pending, want 0", k, got)
		}
	}
}
