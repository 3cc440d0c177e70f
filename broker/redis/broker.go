package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/backlog"
	"github.com/gyrehq/gyre/broker/internal/pubconv"
	"github.com/gyrehq/gyre/broker/redis/internal/wirepb"
	"github.com/gyrehq/gyre/internal/faillog"
	"github.com/redis/rueidis"
)

// Broker is a broker.Broker that shares publications, history, join/leave
// and control messages between Gyre nodes through Redis. Its methods are
// safe for concurrent use.
type Broker struct {
	e   *Engine
	cfg Config
	log *slog.Logger
	// fails rate-limits the lines of failures that can come once per
	// message or per reconnect (see logRepeated).
	fails *faillog.Log
	// shards[client][shard] are the pub/sub connections.
	shards [][]*subShard
	// infix follows the key base in the pub/sub names of channels
	// (pubsubInfix, or mapPubSubInfix for a MapBroker's); label ends the
	// names of the connections in logs and errors.
	infix string
	label string

	// handler is set by Run before any goroutine that reads it starts.
	handler broker.EventHandler
	// backlog tells the handler when the pub/sub queues fall behind;
	// backlogTo, when set before Run, is told instead (a MapBroker's
	// RunHandler, which Run gets wrapped).
	backlog   backlog.Meter
	backlogTo any
	running   atomic.Bool
	closed    atomic.Bool

	// patterns holds the connections carrying the pattern scopes (one
	// per Redis client, or per base in a cluster), made by the first
	// SubscribePatternScope. startMu
	// orders making them with Close; patMu serializes scope subscriptions
	// and guards scopeRefs (see patterns.go).
	patterns  atomic.Pointer[[]*subShard]
	startMu   sync.Mutex
	patMu     sync.Mutex
	scopeRefs map[string]int

	// pipelines counts publish pipelines, and with pipelineSalt (random,
	// per broker) makes each one's token (markReplicationReads).
	pipelines    atomic.Uint64
	pipelineSalt string
	// durableRestarts is the publish script's argument for
	// Config.DurableRestarts: "1" or "0".
	durableRestarts string
	// syncSlots bounds the publish pipelines that wait for replicas at
	// once (see withSyncSlot).
	syncSlots chan struct{}

	closeOnce sync.Once
	stop      chan struct{}
	wg        sync.WaitGroup
}

var (
	_ broker.Broker        = (*Broker)(nil)
	_ broker.HealthChecker = (*Broker)(nil)
	_ broker.PatternBroker = (*Broker)(nil)
)

// logRepeated writes a line of a failure that can repeat once per message
// or per reconnect: per kind and shard (where), the first few of a second
// one by one, then a count, so that a stream of bad messages or a
// flapping connection does not flood the log.
func (b *Broker) logRepeated(kind, where string, level slog.Level, msg string, attrs ...any) {
	b.fails.Add(kind+" "+where, level, msg, append([]any{"redis", where}, attrs...)...)
}

// redisName names a Redis client in logs and errors: its address, the
// Sentinel master's name, or "cluster".
func (b *Broker) redisName(client int) string {
	switch b.e.mode {
	case modeCluster:
		return "cluster"
	case modeSentinel:
		return "sentinel master " + b.cfg.SentinelMasterName
	}
	return b.cfg.Addresses[client]
}

func newBroker(e *Engine) *Broker {
	b := newPubSub(e, pubsubInfix, "")
	b.shards[0][0].control = e.bases[0] + controlSuffix
	for _, row := range b.shards {
		for si, s := range row {
			s.group = groupName(s.base, si)
		}
	}
	return b
}

// newPubSub returns a Broker whose pub/sub connections carry channels
// named base+infix+channel; label ends the names of its connections in
// logs. The MapBroker runs one of its own for map channels (infix
// mapPubSubInfix), without control messages.
func newPubSub(e *Engine, infix, label string) *Broker {
	b := &Broker{
		infix:     infix,
		label:     label,
		e:         e,
		cfg:       e.cfg,
		log:       e.log,
		fails:     faillog.New(e.log),
		stop:      make(chan struct{}),
		scopeRefs: make(map[string]int),
		syncSlots: make(chan struct{}, syncConcurrency),
		// A token is pipeline count and salt: unique across the nodes
		// that share a Redis, short, and free of ':'.
		pipelineSalt:    "." + newEpoch(),
		durableRestarts: "0",
	}
	if e.cfg.DurableRestarts {
		b.durableRestarts = "1"
	}
	for ci, c := range e.clients {
		row := make([]*subShard, len(e.bases))
		for si, base := range e.bases {
			where := b.where(ci, si)
			row[si] = newSubShard(b, c, where, base, e.mode == modeCluster)
		}
		b.shards = append(b.shards, row)
	}
	return b
}

// where names a shard in logs and errors; shard -1 is the client's
// pattern connection outside a cluster (in one, a base has its own).
func (b *Broker) where(client, shard int) string {
	if b.e.mode == modeCluster {
		return fmt.Sprintf("cluster shard %d%s", shard, b.label)
	}
	addr := b.redisName(client)
	if shard < 0 {
		return addr + " patterns"
	}
	if len(b.e.bases) > 1 {
		return fmt.Sprintf("%s shard %d%s", addr, shard, b.label)
	}
	return addr + b.label
}

// Run starts the pub/sub connections, which call h from now on, and waits
// until they are subscribed. If that takes longer than the connect and I/O
// timeouts together, Run returns an error wrapping broker.ErrNotAvailable;
// the connections keep trying until Close. It may be called once.
func (b *Broker) Run(h broker.EventHandler) error {
	if b.closed.Load() {
		return ErrClosed
	}
	if h == nil {
		return errors.New("redis: Run with nil handler")
	}
	if !b.running.CompareAndSwap(false, true) {
		return errors.New("redis: Run called twice")
	}
	b.handler = h
	if b.backlogTo != nil {
		b.backlog.SetHandler(b.backlogTo)
	} else {
		b.backlog.SetHandler(h)
	}
	for _, row := range b.shards {
		for _, s := range row {
			b.wg.Add(2)
			go func() { defer b.wg.Done(); s.run() }()
			go func() { defer b.wg.Done(); s.work() }()
		}
	}
	if b.e.mode == modeSentinel {
		b.wg.Add(1)
		go func() { defer b.wg.Done(); b.watchMaster() }()
	}
	deadline := time.NewTimer(b.cfg.ConnectTimeout + b.cfg.IOTimeout)
	defer deadline.Stop()
	for _, row := range b.shards {
		for _, s := range row {
			select {
			case <-s.ready:
			case <-deadline.C:
				return s.notUp()
			}
		}
	}
	return nil
}

func (b *Broker) shard(channel string) *subShard {
	ci, si := b.e.locate(channel)
	return b.shards[ci][si]
}

func (b *Broker) checkRunning() error {
	if b.closed.Load() {
		return ErrClosed
	}
	if !b.running.Load() {
		return errors.New("redis: broker not running")
	}
	return nil
}

// Subscribe subscribes this node to the channel's pub/sub and returns once
// Redis confirmed, so that everything published afterwards is delivered.
// While the channel's Redis is unreachable it fails with an error
// wrapping broker.ErrNotAvailable.
func (b *Broker) Subscribe(channel string) error {
	if err := b.checkRunning(); err != nil {
		return err
	}
	return b.shard(channel).add(channel)
}

// Unsubscribe stops delivery of the channel's events to this node.
func (b *Broker) Unsubscribe(channel string) error {
	if err := b.checkRunning(); err != nil {
		return err
	}
	return b.shard(channel).remove(channel)
}

// PublishJoin sends a join event to every node subscribed to the channel.
func (b *Broker) PublishJoin(channel string, info *broker.ClientInfo) error {
	return b.publishInfo(channel, wirepb.Message_JOIN, info)
}

// PublishLeave sends a leave event to every node subscribed to the channel.
func (b *Broker) PublishLeave(channel string, info *broker.ClientInfo) error {
	return b.publishInfo(channel, wirepb.Message_LEAVE, info)
}

func (b *Broker) publishInfo(channel string, typ wirepb.Message_Type, info *broker.ClientInfo) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	infoBytes, err := pubconv.ToProtoInfo(info).MarshalVT()
	if err != nil {
		return fmt.Errorf("redis: encode client info: %w", err)
	}
	msg, err := (&wirepb.Message{Type: typ, Info: infoBytes}).MarshalVT()
	if err != nil {
		return fmt.Errorf("redis: encode message: %w", err)
	}
	ci, si := b.e.locate(channel)
	return b.send(b.e.clients[ci], b.e.bases[si]+pubsubInfix+channel, msg)
}

// PublishControl sends data to every node. Control messages are not
// addressed in Redis: every node receives them and the engine drops those
// for other nodes (its messages carry the target).
func (b *Broker) PublishControl(data []byte, nodeID string) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	msg, err := (&wirepb.Message{Type: wirepb.Message_CONTROL, Data: data}).MarshalVT()
	if err != nil {
		return fmt.Errorf("redis: encode message: %w", err)
	}
	return b.send(b.e.clients[0], b.shards[0][0].control, msg)
}

func (b *Broker) send(c rueidis.Client, name string, msg []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.IOTimeout)
	defer cancel()
	var cmd rueidis.Completed
	if b.e.mode == modeCluster {
		cmd = c.B().Spublish().Channel(name).Message(rueidis.BinaryString(msg)).Build()
	} else {
		cmd = c.B().Publish().Channel(name).Message(rueidis.BinaryString(msg)).Build()
	}
	if err := c.Do(ctx, cmd).Error(); err != nil {
		return wrapErr("publish", err)
	}
	return nil
}

func (b *Broker) checkOpen() error {
	if b.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Healthy returns an error while any pub/sub connection is down: this
// node then misses publications, and the node's health should say so.
func (b *Broker) Healthy() error {
	if b.closed.Load() {
		return ErrClosed
	}
	if !b.running.Load() {
		return errors.New("redis: broker not running")
	}
	var errs []error
	for _, row := range b.shards {
		for _, s := range row {
			if err := s.healthy(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if p := b.patterns.Load(); p != nil {
		for _, s := range *p {
			if err := s.healthy(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Close stops the pub/sub connections and waits for their goroutines.
// Later calls return nil; other methods then return ErrClosed.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.startMu.Lock()
		b.closed.Store(true)
		b.startMu.Unlock()
		close(b.stop)
		b.wg.Wait()
		b.e.release()
	})
	return nil
}
