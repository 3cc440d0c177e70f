package redisstream_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume/redisstream/redisstreamtest"
)

// TestTwoNodes: two nodes in one group, one reader per stream each: a
// stream is read by one node at a time (the holder of its lease), so
// each stream's entries run once, in stream order.
func TestTwoNodes(t *testing.T) {
	t.Parallel()
	p := redisstreamtest.Open(t, 2, false)
	n1, exec1 := newNode(t)
	n2, exec2 := newNode(t)
	c, _ := p.Consumer("two", "g", false)
	r1 := start(t, exec1, c)
	r2 := start(t, exec2, c)
	const total = 2000
	chans := []string{"two-a", "two-b"}
	for i := 0; i < total; i += 100 {
		for s, ch := range chans {
			p.Produce(t, s, publishes(ch, i, i+100)...)
		}
	}
	for _, ch := range chans {
		eventually(t, "every entry of "+ch+" run", func() bool {
			return len(history(t, n1, ch))+len(history(t, n2, ch)) >= total
		})
	}
	r1.stop()
	r2.stop()
	for _, ch := range chans {
		got1, got2 := numbers(t, history(t, n1, ch)), numbers(t, history(t, n2, ch))
		t.Logf("%s: node 1 ran %d entries, node 2 %d", ch, len(got1), len(got2))
		wantSequence(t, slices.Concat(got1, got2), 0, total)
	}
}

// TestTakeOver: when the node reading a stream stops, another node of the
// group takes the stream over and goes on where it stopped.
func TestTakeOver(t *testing.T) {
	t.Parallel()
	p := redisstreamtest.Open(t, 1, false)
	n1, exec1 := newNode(t)
	n2, exec2 := newNode(t)
	c, _ := p.Consumer("takeover", "g", false)
	r1 := start(t, exec1, c)
	r2 := start(t, exec2, c)
	p.Produce(t, 0, publishes("takeover", 0, 500)...)
	eventually(t, "the first entries run", func() bool {
		return len(history(t, n1, "takeover"))+len(history(t, n2, "takeover")) >= 500
	})
	holder, holderNode, other, otherNode := r1, n1, r2, n2
	if len(history(t, n2, "takeover")) > 0 {
		holder, holderNode, other, otherNode = r2, n2, r1, n1
	}
	holder.stop()
	p.Produce(t, 0, publishes("takeover", 500, 1000)...)
	waitHistory(t, otherNode, "takeover", 500)
	other.stop()
	wantSequence(t, numbers(t, history(t, holderNode, "takeover")), 0, 500)
	wantSequence(t, numbers(t, history(t, otherNode, "takeover")), 500, 1000)
}

// TestTwoNodesWorkers: with several readers per stream on each node, the
// group hands entries to whichever asks: each entry runs once, on one of
// the nodes, in no set order.
func TestTwoNodesWorkers(t *testing.T) {
	t.Parallel()
	p := redisstreamtest.Open(t, 1, false)
	n1, exec1 := newNode(t)
	n2, exec2 := newNode(t)
	c, _ := p.Consumer("twow", "g", false)
	c.RedisStream.NumWorkers = 2
	r1 := start(t, exec1, c)
	r2 := start(t, exec2, c)
	const total = 5000
	for i := 0; i < total; i += 100 {
		p.Produce(t, 0, publishes("twow", i, i+100)...)
	}
	eventually(t, "every entry run", func() bool {
		return len(history(t, n1, "twow"))+len(history(t, n2, "twow")) >= total
	})
	r1.stop()
	r2.stop()
	got1, got2 := numbers(t, history(t, n1, "twow")), numbers(t, history(t, n2, "twow"))
	t.Logf("node 1 ran %d entries, node 2 %d", len(got1), len(got2))
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
	c.RedisStream.Address = []string{p1.Addr, "redis://" + p2.Addr}
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

// TestPassword: the consumer authenticates as the Redis configuration
// says.
func TestPassword(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// Set once started: the readiness check of redistest does not
	// authenticate.
	if out, err := srv.Cli("config", "set", "requirepass", "secret"); err != nil || out != "OK" {
		t.Fatalf("CONFIG SET requirepass: %q, %v", out, err)
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, Password: "secret", DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	makeGroup(t, client, "auth", "g")
	redisstreamtest.Add(t, client, "auth", publishes("auth", 0, 10)...)
	n, exec := newNode(t)
	start(t, exec, config.Consumer{
		Name: "auth", Enabled: true, Type: "redis_stream",
		RedisStream: config.RedisStreamConsumer{
			Redis:   config.Redis{Address: []string{srv.Addr}, Password: "secret"},
			Streams: []string{"auth"}, ConsumerGroup: "g", MethodValue: "method",
		},
	})
	wantSequence(t, numbers(t, waitHistory(t, n, "auth", 10)), 0, 10)
}

// TestSentinelFailover: through Sentinels the consumer follows the master
// to the promoted replica. Entries whose acknowledgement the replica had
// not received yet may run twice (at least once); none is lost.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t)
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: s.Addrs(), DisableCache: true,
		Sentinel: rueidis.SentinelOption{MasterSet: redistest.MasterName},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	makeGroup(t, client, "failover", "g")
	n, exec := newNode(t)
	r := start(t, exec, config.Consumer{
		Name: "sentinel", Enabled: true, Type: "redis_stream",
		RedisStream: config.RedisStreamConsumer{
			Redis:   config.Redis{SentinelAddress: s.Addrs(), SentinelMasterName: redistest.MasterName},
			Streams: []string{"failover"}, ConsumerGroup: "g", MethodValue: "method",
		},
	})
	redisstreamtest.Add(t, client, "failover", publishes("failover", 0, 500)...)
	waitHistory(t, n, "failover", 500)
	// The replica has every entry before the master goes.
	eventually(t, "the replica in sync", func() bool {
		out, err := s.Replica.Cli("xlen", "failover")
		return err == nil && out == "500"
	})
	s.Master.Kill()
	s.WaitMaster(t, s.Replica.Addr)
	eventually(t, "entries added to the new master", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return client.Do(ctx, client.B().Ping().Build()).Error() == nil
	})
	redisstreamtest.Add(t, client, "failover", publishes("failover", 500, 1000)...)
	eventually(t, "every entry run", func() bool {
		seen := map[int]bool{}
		for _, v := range numbers(t, history(t, n, "failover")) {
			seen[v] = true
		}
		return len(seen) == 1000
	})
	r.stop()
	var after []int
	for _, v := range numbers(t, history(t, n, "failover")) {
		if v >= 500 {
			after = append(after, v)
		}
	}
	wantSequence(t, after, 500, 1000)
}
