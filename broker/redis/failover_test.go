package redis

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// longHistory keeps every publication of the failover tests, so that what
// History returns can be compared with every acknowledgement.
var longHistory = broker.PublishOptions{HistorySize: 1_000_000, HistoryTTL: 10 * time.Minute}

// ack is an acknowledged publication: the position its publisher was told.
type ack struct {
	data string
	sp   broker.StreamPosition
}

// publisher publishes into one channel as fast as the broker answers, one
// or three publications a call, and records every acknowledgement.
type publisher struct {
	mu   sync.Mutex
	acks []ack
	errs int
	stop chan struct{}
	done chan struct{}
}

func startPublisher(b *Broker, ch string) *publisher {
	p := &publisher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			// Every other call publishes three at once, which the broker
			// sends as one script call (a run).
			items := make([]broker.PublishItem, 1+2*(i%2))
			for k := range items {
				items[k] = broker.PublishItem{Channel: ch, Data: []byte(strconv.Itoa(i) + "." + strconv.Itoa(k)), Opts: longHistory}
			}
			b.PublishMany(items)
			failed := false
			p.mu.Lock()
			for _, it := range items {
				if it.Err != nil {
					p.errs++
					failed = true
				} else {
					p.acks = append(p.acks, ack{string(it.Data), it.Position})
				}
			}
			p.mu.Unlock()
			if failed {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}()
	return p
}

// count is the number of acknowledgements so far.
func (p *publisher) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acks)
}

// finish stops the publisher and returns what it was acknowledged.
func (p *publisher) finish() []ack {
	close(p.stop)
	<-p.done
	return p.acks
}

// checkContinuity fails the test when a stream position was given to two
// different publications, or when recovery from an acknowledged position
// would claim success (not unrecoverable) without returning every
// publication acknowledged after it in the same epoch: a client resuming
// there would be told it recovered while it missed those.
func checkContinuity(t *testing.T, b *Broker, ch string, acks []ack) {
	t.Helper()
	byPos := make(map[broker.StreamPosition]string, len(acks))
	first := make(map[string]broker.StreamPosition) // epoch: lowest acknowledged position
	for _, a := range acks {
		if prev, ok := byPos[a.sp]; ok && prev != a.data {
			t.Fatalf("offset %d of epoch %q given to %q and then to %q", a.sp.Offset, a.sp.Epoch, prev, a.data)
		}
		byPos[a.sp] = a.data
		if f, ok := first[a.sp.Epoch]; !ok || a.sp.Offset < f.Offset {
			first[a.sp.Epoch] = a.sp
		}
	}
	for epoch, since := range first {
		pubs, top, err := b.History(ch, broker.HistoryOptions{Filter: broker.HistoryFilter{Since: &since, Limit: -1}, MetaTTL: time.Hour})
		if err != nil {
			if errors.Is(err, broker.ErrUnrecoverablePosition) {
				t.Logf("epoch %q: recovery from offset %d refused (unrecoverable), stream now at %d in %q", epoch, since.Offset, top.Offset, top.Epoch)
				continue
			}
			t.Fatalf("History since %+v: %v", since, err)
		}
		got := make(map[uint64]string, len(pubs))
		for _, p := range pubs {
			got[p.Offset] = string(p.Data)
		}
		missed := 0
		for _, a := range acks {
			if a.sp.Epoch == epoch && a.sp.Offset > since.Offset && got[a.sp.Offset] != a.data {
				missed++
			}
		}
		if missed > 0 {
			t.Errorf("epoch %q: recovery from offset %d is allowed (stream at %d) but would miss %d acknowledged publications", epoch, since.Offset, top.Offset, missed)
		}
	}
}

// epochs lists the epochs of acks in the order they first appear.
func epochs(acks []ack) []string {
	var out []string
	seen := make(map[string]bool)
	for _, a := range acks {
		if !seen[a.sp.Epoch] {
			seen[a.sp.Epoch] = true
			out = append(out, a.sp.Epoch)
		}
	}
	return out
}

// TestSentinelFailoverContinuity: a graceful SENTINEL FAILOVER while a
// publisher publishes as fast as it can. Redis replicates asynchronously,
// so the old master may acknowledge writes the new one never receives;
// whatever it lost, no stream position may be handed out twice in one
// epoch, and recovery from any acknowledged position either returns every
// publication acknowledged after it or is refused.
func TestSentinelFailoverContinuity(t *testing.T) {
	// DurableRestarts does not keep the epoch at a promotion: a promoted
	// replica may lack writes whatever the disks do.
	b, acks := failoverUnderPublishing(t, Config{DurableRestarts: true}, "continuity", 500)
	checkContinuity(t, b, "continuity", acks)
}

// runSentinelBroker runs a broker on the Sentinels of s (cfg with their
// addresses set), subscribed to ch, and checks that a publication into ch
// comes back.
func runSentinelBroker(t *testing.T, s *redistest.Sentinel, cfg Config, ch string) (*Broker, *events) {
	t.Helper()
	cfg.SentinelAddresses, cfg.SentinelMasterName, cfg.IOTimeout = s.Addrs(), redistest.MasterName, time.Second
	b, ev := runBroker(t, cfg)
	if err := b.Subscribe(ch); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	mustPublish(t, b, ch, "before")
	expectData(t, ev, ch, "before")
	return b, ev
}

// failoverUnderPublishing starts a master, a replica and three Sentinels
// and a broker on them (cfg with the Sentinel addresses set), publishes
// into ch as fast as the broker answers, asks for a graceful failover
// once n publications were acknowledged, and stops n acknowledgements
// after the old master became a replica. It returns the broker and every
// acknowledgement.
func failoverUnderPublishing(t *testing.T, cfg Config, ch string, n int) (*Broker, []ack) {
	t.Helper()
	s := redistest.StartSentinel(t)
	b, ev := runSentinelBroker(t, s, cfg, ch)
	go func() {
		for range ev.pubs { // delivery is not what these tests check
		}
	}()
	p := startPublisher(b, ch)
	eventually(t, "publications before the failover", func() bool { return p.count() > n })
	s.Failover(t)
	s.WaitMaster(t, s.Replica.Addr)
	// Until the old master is reconfigured as a replica it may still take
	// writes; only after that do publications surely reach the new one.
	eventually(t, "the old master to become a replica", func() bool {
		role, err := s.Master.Cli("role")
		return err == nil && strings.HasPrefix(role, "slave")
	})
	at := p.count()
	eventually(t, "publications after the failover", func() bool { return p.count() > at+n })
	acks := p.finish()
	t.Logf("%d publications acknowledged, %d failed, epochs %v", len(acks), p.errs, epochs(acks))
	return b, acks
}

// TestSentinelPubSubFollowsMaster: after a failover whose old master
// cannot be reconfigured (here it refuses REPLICAOF, as a master cut off
// from the Sentinels would never get it), nothing closes the pub/sub
// connection on it. The broker notices the master changed, moves its
// pub/sub to the new master, reports the channel lost and delivers the
// new master's publications.
func TestSentinelPubSubFollowsMaster(t *testing.T) {
	s := redistest.StartSentinel(t, "--rename-command", "REPLICAOF", "", "--rename-command", "SLAVEOF", "")
	const ch = "follow"
	b, ev := runSentinelBroker(t, s, Config{}, ch)

	s.Failover(t)
	s.WaitMaster(t, s.Replica.Addr)
	waitLost(t, ev, ch)
	eventually(t, "Publish to reach the new master", func() bool {
		_, _, err := b.Publish(ch, []byte("after"), history)
		return err == nil
	})
	for d := ev.next(t); string(d.pub.Data) != "after"; d = ev.next(t) {
	}
	if role, err := s.Master.Cli("role"); err != nil || !strings.HasPrefix(role, "master") {
		t.Fatalf("the old master was reconfigured after all (%q, %v): the test proves nothing", role, err)
	}
}

// TestClusterFailoverContinuity: a Redis Cluster of three masters with a
// replica each; while publishers write to channels on every master, the
// replicas take over without waiting to catch up (CLUSTER FAILOVER
// TAKEOVER), as after a master's crash. Whatever they lacked, no stream
// position is handed out twice in one epoch and recovery never claims
// success across the loss.
func TestClusterFailoverContinuity(t *testing.T) {
	c := redistest.StartClusterWithReplicas(t, 3, 1)
	b, ev := runBroker(t, Config{ClusterAddresses: c.Addrs(), ClusterShards: 8, IOTimeout: time.Second})
	go func() {
		for range ev.pubs {
		}
	}()
	chs := []string{"cf-a", "cf-b", "cf-c", "cf-d", "cf-e", "cf-f"}
	var pubs []*publisher
	for _, ch := range chs {
		if err := b.Subscribe(ch); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		pubs = append(pubs, startPublisher(b, ch))
	}
	eventually(t, "publications before the failover", func() bool { return pubs[len(pubs)-1].count() > 300 })
	var promoted []*redistest.Server
	for _, n := range c.Nodes {
		if role, err := n.Cli("role"); err == nil && strings.HasPrefix(role, "slave") {
			if out, err := n.Cli("cluster", "failover", "takeover"); err != nil || out != "OK" {
				t.Fatalf("CLUSTER FAILOVER TAKEOVER on %s: %q, %v", n.Addr, out, err)
			}
			promoted = append(promoted, n)
		}
	}
	for _, n := range promoted {
		eventually(t, n.Addr+" to be a master", func() bool {
			role, err := n.Cli("role")
			return err == nil && strings.HasPrefix(role, "master")
		})
	}
	counts := make([]int, len(pubs))
	for i, p := range pubs {
		counts[i] = p.count()
	}
	for i, p := range pubs {
		eventually(t, "publications after the failover", func() bool { return p.count() > counts[i]+300 })
	}
	for i, p := range pubs {
		acks := p.finish()
		t.Logf("%s: %d publications acknowledged, %d failed, epochs %v", chs[i], len(acks), p.errs, epochs(acks))
		checkContinuity(t, b, chs[i], acks)
	}
}

// TestSyncReplicas: with Config.SyncReplicas a publish is acknowledged
// once the replica has it; while the replica cannot answer, publishes that
// Redis ran fail with broker.ErrNotAvailable instead of being
// acknowledged, and succeed again once it is back. On a Redis without
// replicas every publish fails that way.
func TestSyncReplicas(t *testing.T) {
	s := redistest.StartSentinel(t)
	b, _ := runBroker(t, Config{
		SentinelAddresses:   s.Addrs(),
		SentinelMasterName:  redistest.MasterName,
		SyncReplicas:        1,
		SyncReplicasTimeout: 300 * time.Millisecond,
	})
	const ch = "synced"
	sp := mustPublish(t, b, ch, "one")
	if n, err := s.Replica.Cli("xlen", streamKey(b.e.bases[0], ch)); err != nil || n != "1" {
		t.Fatalf("the replica's stream after an acknowledged publish: length %q, %v; want 1", n, err)
	}

	s.Replica.Pause()
	_, _, err := b.Publish(ch, []byte("two"), history)
	s.Replica.Resume()
	if !errors.Is(err, broker.ErrNotAvailable) {
		t.Fatalf("publish while the replica is paused: %v, want an error wrapping ErrNotAvailable", err)
	}
	next := mustPublish(t, b, ch, "three")
	// "two" ran on the master (it is in its history, delivered), so
	// "three" comes after it.
	if next.Epoch != sp.Epoch || next.Offset != sp.Offset+2 {
		t.Fatalf("publish after the replica is back at %+v, want offset %d of %q", next, sp.Offset+2, sp.Epoch)
	}
	// A run of publications in one script call is acknowledged, and
	// replicated, as a whole.
	run := make([]broker.PublishItem, 5)
	for i := range run {
		run[i] = broker.PublishItem{Channel: ch, Data: []byte("run"), Opts: history}
	}
	b.PublishMany(run)
	for i, it := range run {
		if it.Err != nil || it.Position != (broker.StreamPosition{Offset: next.Offset + uint64(i) + 1, Epoch: next.Epoch}) {
			t.Fatalf("run item %d: %+v, %v; want offset %d of %q", i, it.Position, it.Err, next.Offset+uint64(i)+1, next.Epoch)
		}
	}
	if n, err := s.Replica.Cli("xlen", streamKey(b.e.bases[0], ch)); err != nil || n != "8" {
		t.Fatalf("the replica's stream after the run: length %q, %v; want 8", n, err)
	}

	alone, _ := runBroker(t, Config{
		Addresses:           []string{redistest.Start(t).Addr},
		SyncReplicas:        1,
		SyncReplicasTimeout: 100 * time.Millisecond,
	})
	if _, _, err := alone.Publish(ch, []byte("x"), history); !errors.Is(err, broker.ErrNotAvailable) {
		t.Fatalf("publish on a Redis without replicas: %v, want an error wrapping ErrNotAvailable", err)
	}
}

// TestSyncReplicasCluster: in a cluster each master waits for its own
// replica; a PublishMany over channels of every master is acknowledged.
func TestSyncReplicasCluster(t *testing.T) {
	c := redistest.StartClusterWithReplicas(t, 3, 1)
	b, _ := runBroker(t, Config{ClusterAddresses: c.Addrs(), ClusterShards: 8, SyncReplicas: 1})
	var items []broker.PublishItem
	for i := range 32 {
		items = append(items, broker.PublishItem{Channel: "sc" + strconv.Itoa(i), Data: []byte("d"), Opts: history})
	}
	b.PublishMany(items)
	for _, it := range items {
		if it.Err != nil || it.Position.Offset != 1 {
			t.Fatalf("%s: %+v, %v", it.Channel, it.Position, it.Err)
		}
	}
}

// TestSentinelFailoverSyncReplicas: the failover of
// TestSentinelFailoverContinuity with SyncReplicas 1. The stream still
// starts a new epoch on the new master (the broker cannot tell a failover
// that lost nothing), but every publication acknowledged before or after
// the switch is in its history, at the offset its publisher was told.
func TestSentinelFailoverSyncReplicas(t *testing.T) {
	const ch = "continuity-sync"
	b, acks := failoverUnderPublishing(t, Config{SyncReplicas: 1}, ch, 300)
	checkContinuity(t, b, ch, acks)
	pubs, _, err := b.History(ch, broker.HistoryOptions{Filter: broker.HistoryFilter{Limit: -1}})
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	held := make(map[uint64]string, len(pubs))
	for _, p := range pubs {
		held[p.Offset] = string(p.Data)
	}
	lost := 0
	for _, a := range acks {
		if held[a.sp.Offset] != a.data {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d acknowledged publications are not in the history at their offsets", lost)
	}
}

// TestReplicationIDKeyNeedsToken: a publish script told to read its
// server's replication id from the key base's replid key (a call after the
// first of its pipeline) trusts the key only when its own pipeline's token
// is in it. A value of another pipeline, or one that replication or a
// snapshot brought from another server, is checked against INFO: here the
// key and the stream's meta both name a master that is not this server,
// as after a failover, and the stream must start a new epoch.
func TestReplicationIDKeyNeedsToken(t *testing.T) {
	srv := redistest.Start(t)
	b, _ := runBroker(t, Config{Addresses: []string{srv.Addr}})
	const ch = "tokens"
	sp := mustPublish(t, b, ch, "one")
	base := b.e.bases[0]
	const other = "0123456789abcdef0123456789abcdef01234567"
	if _, err := srv.Cli("hset", metaKey(base, ch), "r", other); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Cli("set", base+replIDSuffix, "stale.token:"+other); err != nil {
		t.Fatal(err)
	}
	item := broker.PublishItem{Channel: ch, Data: []byte("two"), Opts: history}
	c := publishCall{item: &item}
	if err := b.prepare(&c, &encoder{now: time.Now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	c.args[argReplicationRead] = "k:fresh.token"
	client := b.e.clients[0]
	c.setResult(client.Do(t.Context(), publishScript.cmd(client, c.keys, c.args, true)))
	if item.Err != nil {
		t.Fatalf("publish: %v", item.Err)
	}
	if item.Position.Epoch == sp.Epoch {
		t.Fatalf("the stream kept epoch %q although its meta names another master: the stale key was trusted", sp.Epoch)
	}
	if item.Position.Offset != sp.Offset+1 {
		t.Fatalf("offset %d after %d: the new epoch keeps the stream's offsets", item.Position.Offset, sp.Offset)
	}
}

// TestRestartEpoch: a Redis that syncs every write (appendfsync always)
// is restarted. With Config.DurableRestarts the stream keeps its epoch and
// offsets, and a recovery from before the restart succeeds; without it
// the next publish starts a new epoch (a restart of a Redis that may lose
// writes must not let an offset be handed out twice), and recovery from
// before answers unrecoverable.
func TestRestartEpoch(t *testing.T) {
	for _, durable := range []bool{true, false} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
			b, _ := runBroker(t, Config{Addresses: []string{srv.Addr}, DurableRestarts: durable, IOTimeout: time.Second})
			const ch = "restart-epoch"
			before := mustPublish(t, b, ch, "before")
			srv.Kill()
			srv.Restart()
			var after broker.StreamPosition
			eventually(t, "a publish after the restart", func() bool {
				sp, _, err := b.Publish(ch, []byte("after"), history)
				after = sp
				return err == nil
			})
			_, _, err := b.History(ch, broker.HistoryOptions{Filter: broker.HistoryFilter{Since: &before, Limit: -1}})
			if durable {
				if after.Epoch != before.Epoch || after.Offset != before.Offset+1 {
					t.Fatalf("after a durable restart the stream is at %+v, want offset %d of %q", after, before.Offset+1, before.Epoch)
				}
				if err != nil {
					t.Fatalf("recovery from before the restart: %v", err)
				}
				return
			}
			if after.Epoch == before.Epoch {
				t.Fatalf("the stream kept epoch %q across a restart that may lose writes", before.Epoch)
			}
			if !errors.Is(err, broker.ErrUnrecoverablePosition) {
				t.Fatalf("recovery from before the restart: %v, want ErrUnrecoverablePosition", err)
			}
		})
	}
}
