package redisstream_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/consume/redisstream/redisstreamtest"
)

// TestRedisRestart: Redis killed and started again (keeping its data)
// while entries are being added and consumed: the consumer rides it out,
// and every entry is published once, in order.
func TestRedisRestart(t *testing.T) {
	t.Parallel()
	p := redisstreamtest.Open(t, 1, true)
	n, exec := newNode(t)
	c, _ := p.Consumer("restart", "g", false)
	makeGroup(t, p.Client, p.Keys[0], "g")
	r := start(t, exec, c)

	const total = 20_000
	var wg sync.WaitGroup
	wg.Go(func() { addByID(t, p.Client, p.Keys[0], "restart", total) })
	waitHistory(t, n, "restart", total/10)
	p.Outage(t, time.Second)
	wg.Wait()
	waitHistory(t, n, "restart", total)
	r.stop()
	wantSequence(t, numbers(t, history(t, n, "restart")), 0, total)
	if s := r.snapshot(); s.SourceErrors == 0 {
		t.Error("no source error counted: the outage went unnoticed")
	}
}

// addByID adds entries publishing {"n": 0} to {"n": total-1} into ch,
// 100 at a time, each with the ID n+1, trying again while Redis is down.
// Fixed IDs make a retry of an entry Redis added before it went down
// fail rather than add it twice.
func addByID(t testing.TB, c rueidis.Client, key, ch string, total int) {
	for i := 0; i < total; {
		end := min(i+100, total)
		cmds := make(rueidis.Commands, 0, end-i)
		for j := i; j < end; j++ {
			m := publishMsg(ch, j)
			cmds = append(cmds, c.B().Xadd().Key(key).Id(strconv.Itoa(j+1)+"-0").FieldValue().
				FieldValue("method", m.Method).FieldValue("payload", string(m.Payload)).Build())
		}
		ok := true
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		for _, res := range c.DoMulti(ctx, cmds...) {
			if err := res.Error(); err != nil && !strings.Contains(err.Error(), "equal or smaller") {
				ok = false
			}
		}
		cancel()
		if ok {
			i = end
		} else {
			time.Sleep(50 * time.Millisecond)
		}
		// Slower than the consumer, so that the outage comes while
		// entries are still being added.
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReclaimDeadConsumer: entries that a node took and never
// acknowledged (it died holding the stream's lease) run on the node that
// takes the lease over once it expires, in stream order before the newer
// ones.
func TestReclaimDeadConsumer(t *testing.T) {
	t.Parallel()
	p := redisstreamtest.Open(t, 1, false)
	n, exec := newNode(t)
	c, _ := p.Consumer("reclaim", "g", false)
	key := p.Keys[0]
	p.Produce(t, 0, publishes("reclaim", 0, 100)...)
	// A node that takes 20 entries, holding the lease, and dies.
	takeEntries(t, p.Client, key, "g", "dead", 20)
	err := p.Client.Do(context.Background(), p.Client.B().Set().Key("gyre.lease.g."+key).Value("dead").
		Px(500*time.Millisecond).Build()).Error()
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, exec, c)
	p.Produce(t, 0, publishes("reclaim", 100, 150)...)
	waitHistory(t, n, "reclaim", 150)
	r.stop()
	wantSequence(t, numbers(t, history(t, n, "reclaim")), 0, 150)
	if got := pending(t, p.Client, key, "g"); got != 0 {
		t.Errorf("%d entries pending, want 0", got)
	}
}

// TestReclaimDeadConsumerWorkers: with several readers per stream (no
// lease), entries a consumer took and never acknowledged run on another
// once idle for visibility_timeout.
func TestReclaimDeadConsumerWorkers(t *testing.T) {
	t.Parallel()
	p := redisstreamtest.Open(t, 1, false)
	n, exec := newNode(t)
	c, _ := p.Consumer("reclaimw", "g", false)
	c.RedisStream.NumWorkers = 2
	c.RedisStream.VisibilityTimeout = 300 * time.Millisecond
	key := p.Keys[0]
	p.Produce(t, 0, publishes("reclaimw", 0, 100)...)
	r := start(t, exec, c)
	// Taken while the consumer runs: whether they are taken before the
	// consumer reads, the test cannot tell; those they get run.
	takeEntries(t, p.Client, key, "g", "dead", 20)
	p.Produce(t, 0, publishes("reclaimw", 100, 150)...)
	waitHistory(t, n, "reclaimw", 150)
	r.stop()
	got := numbers(t, history(t, n, "reclaimw"))
	slices.Sort(got)
	wantSequence(t, got, 0, 150)
	if got := pending(t, p.Client, key, "g"); got != 0 {
		t.Errorf("%d entries pending, want 0", got)
	}
}

// takeEntries has consumer take up to n new entries of key and never
// acknowledge them, as a node that dies.
func takeEntries(t testing.TB, c rueidis.Client, key, group, consumer string, n int64) {
	t.Helper()
	err := c.Do(context.Background(), c.B().Xreadgroup().Group(group, consumer).Count(n).
		Streams().Key(key).Id(">").Build()).Error()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("XREADGROUP: %v", err)
	}
}

// TestRenewWhileRetrying: a batch retried while the broker is down stays
// with the consumer running it, however long that takes: another
// consumer of the group does not take it (nor, with one reader per
// stream, the stream's lease) as left by a dead one, and it runs once the
// broker is back.
func TestRenewWhileRetrying(t *testing.T) {
	t.Parallel()
	for _, workers := range []int{1, 2} {
		t.Run("workers="+strconv.Itoa(workers), func(t *testing.T) {
			t.Parallel()
			testRenewWhileRetrying(t, workers)
		})
	}
}

func testRenewWhileRetrying(t *testing.T, workers int) {
	p := redisstreamtest.Open(t, 1, false)
	key := p.Keys[0]
	makeGroup(t, p.Client, key, "g")

	// Node a's broker is a Redis that goes down.
	brokerRedis := redistest.Start(t)
	engine, err := redis.New(redis.Config{Addresses: []string{brokerRedis.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close() })
	nodeA, err := gyre.NewNode(gyre.Config{
		Broker: engine.Broker(), PresenceManager: engine.PresenceManager(),
		Channels: gyre.ChannelConfig{WithoutNamespace: gyre.ChannelOptions{HistorySize: 1000, HistoryTTL: time.Hour}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nodeA.Run(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodeA.Shutdown(context.Background()) })
	nodeB, execB := newNode(t)

	// Long enough that a loaded machine (the race detector, other
	// packages' tests) does not stall a renewal past it.
	const vt = time.Second
	c, _ := p.Consumer("renew", "g", false)
	c.RedisStream.VisibilityTimeout = vt
	c.RedisStream.NumWorkers = workers
	brokerRedis.Kill()
	p.Produce(t, 0, publishes("renew", 0, 50)...)
	a := start(t, api.NewExecutor(nodeA, api.Config{}), c)
	eventually(t, "node a retrying its batch", func() bool {
		return pending(t, p.Client, key, "g") == 50 && a.snapshot().Retries > 0
	})
	b := start(t, execB, c)
	// Several reclaim rounds of node b: none may take a's batch.
	time.Sleep(6 * vt)
	if got := history(t, nodeB, "renew"); len(got) != 0 {
		t.Fatalf("node b published %d entries of the batch node a runs", len(got))
	}
	brokerRedis.Restart()
	eventually(t, "node a publishing its batch", func() bool {
		pubs, _, err := nodeA.History("renew", -1, nil, false)
		return err == nil && len(pubs) == 50
	})
	a.stop()
	b.stop()
	pubs, _, err := nodeA.History("renew", -1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	wantSequence(t, numbers(t, pubs), 0, 50)
	if got := history(t, nodeB, "renew"); len(got) != 0 {
		t.Errorf("node b published %d entries of the batch node a ran", len(got))
	}
}
