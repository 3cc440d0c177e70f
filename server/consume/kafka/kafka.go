// Package kafka consumes Kafka topics: server API commands (a method in
// a header and its request as the record's value, or a value of
// {"method": ..., "payload": ...}), or in publication data mode the data
// of publications into the channels a header names.
//
// The consumer is a member of a consumer group: the nodes of one group
// share the topics' partitions. Each partition it is assigned has a
// goroutine of its own that runs the partition's records in order, as
// many as have arrived (max_poll_records at most) as one batch, and
// commits the offset of what ran: partitions run concurrently, a
// partition in order. A partition whose records pile up
// (partition_queue_max_size) is not fetched from until half of them ran,
// so that a slow partition neither holds the others back nor fills the
// memory.
//
// # Rebalances and shutdown
//
// Polls and rebalances exclude each other (kgo.BlockRebalanceOnPoll): a
// poll's records are queued to their partitions before any partition can
// be taken away. When partitions are revoked, their goroutines finish the
// batch they run (a command that started runs to its end; retries stop),
// their offsets are committed, and what is queued is dropped: the next
// owner starts after the last record run, so that no record runs twice in
// a rebalance. At shutdown every partition does the same, then the
// consumer leaves the group (a static member, with instance_id, stays).
//
// # Source failures
//
// The client reconnects to brokers by itself; failed dials, fetches,
// commits and group sessions are reported to the dispatcher
// (SourceFailed) and retried. Records are committed only once they ran
// or can never run: nothing is lost, a record may run again after a
// crash or a lost group session (publications with an idempotency key
// are then harmless).
package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
)

// clientID names Gyre to the brokers (their logs and quotas).
const clientID = "gyre"

const (
	// commitInterval spaces the commits of offsets done: a commit every
	// batch would write to the offsets topic thousands of times a second.
	// A crash runs again at most what ran in the last interval.
	commitInterval = 100 * time.Millisecond
	// commitTimeout bounds one commit, so that a commit stuck on an
	// unreachable coordinator does not hold a rebalance or the shutdown.
	commitTimeout = 10 * time.Second
	// lagInterval is how often the lag is reported, endsInterval how
	// often the ends of the partitions' logs are asked for.
	lagInterval  = time.Second
	endsInterval = 5 * time.Second
)

// Consumer reads the topics of one consumers[] entry of type kafka.
type Consumer struct {
	cfg  config.KafkaConsumer
	d    *consume.Dispatcher
	opts []kgo.Opt
}

// New makes the consumer of cfg, dialing brokers with tlsCfg (nil for
// plain TCP), running what it reads with d. It connects nothing yet:
// Run does.
func New(cfg config.KafkaConsumer, tlsCfg *tls.Config, d *consume.Dispatcher) (consume.Consumer, error) {
	fillDefaults(&cfg)
	opts, err := clientOpts(&cfg, tlsCfg)
	if err != nil {
		return nil, err
	}
	return &Consumer{cfg: cfg, d: d, opts: opts}, nil
}

// fillDefaults gives the keys left at zero their defaults, for a config
// made in code rather than loaded.
func fillDefaults(cfg *config.KafkaConsumer) {
	if cfg.MaxPollRecords <= 0 {
		cfg.MaxPollRecords = 100
	}
	if cfg.FetchMaxWait <= 0 {
		cfg.FetchMaxWait = 500 * time.Millisecond
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 3 * time.Second
	}
	// As in Centrifugo, 0 is the default; -1 pauses after every poll.
	if cfg.PartitionQueueMaxSize == 0 {
		cfg.PartitionQueueMaxSize = 1000
	}
}

// clientOpts are the options of the franz-go client that cfg asks for,
// but for those of a run (callbacks, hooks, logger).
func clientOpts(cfg *config.KafkaConsumer, tlsCfg *tls.Config) ([]kgo.Opt, error) {
	if len(cfg.Brokers) == 0 || len(cfg.Topics) == 0 || cfg.ConsumerGroup == "" {
		return nil, errors.New("kafka: brokers, topics and consumer_group are required")
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(clientID),
		kgo.ConsumeTopics(cfg.Topics...),
		kgo.ConsumerGroup(cfg.ConsumerGroup),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.DialTimeout(cfg.DialTimeout),
		kgo.FetchMaxWait(cfg.FetchMaxWait),
	}
	if cfg.FetchMaxBytes > 0 {
		opts = append(opts, kgo.FetchMaxBytes(int32(min(cfg.FetchMaxBytes, 1<<31-1))))
	}
	if cfg.FetchReadUncommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	} else {
		// Records of transactions still open or aborted are not read,
		// and offsets being committed by a transaction are waited for.
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets())
	}
	if cfg.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(cfg.InstanceID))
	}
	if tlsCfg != nil {
		opts = append(opts, kgo.DialTLSConfig(tlsCfg))
	}
	switch cfg.SASLMechanism {
	case "":
	case "plain":
		opts = append(opts, kgo.SASL(plain.Auth{User: cfg.SASLUser, Pass: cfg.SASLPassword}.AsMechanism()))
	case "scram-sha-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: cfg.SASLUser, Pass: cfg.SASLPassword}.AsSha256Mechanism()))
	case "scram-sha-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: cfg.SASLUser, Pass: cfg.SASLPassword}.AsSha512Mechanism()))
	default:
		return nil, fmt.Errorf("kafka: sasl_mechanism %q is not supported: use plain, scram-sha-256 or scram-sha-512", cfg.SASLMechanism)
	}
	return opts, nil
}

// Run consumes until ctx ends, then finishes the batches running, commits
// them and leaves the group.
func (c *Consumer) Run(ctx context.Context) error {
	r := &run{
		cfg: &c.cfg, d: c.d, ctx: ctx,
		parts: make(map[topicPartition]*partition),
		ready: make(chan struct{}),
	}
	opts := append(c.opts[:len(c.opts):len(c.opts)],
		kgo.OnPartitionsAssigned(r.assigned),
		kgo.OnPartitionsRevoked(r.revoked),
		kgo.OnPartitionsLost(r.lost),
		kgo.WithHooks(hooks{c.d}),
		kgo.WithLogger(newLogger(c.d.Logger())),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka: client: %w", err)
	}
	r.cl = cl
	r.commits = &committer{cl: cl, d: c.d, wake: make(chan struct{}, 1)}
	close(r.ready)

	var bg sync.WaitGroup
	bg.Go(func() { r.commits.loop(ctx) })
	bg.Go(func() { r.reportLag(ctx) })

	r.poll(ctx)

	// Shutdown: every partition finishes the batch it runs (its context,
	// a child of ctx, stops retries), then what ran is committed before
	// the client leaves the group.
	r.stopAll()
	bg.Wait()
	fctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	if err := r.commits.flush(fctx); err != nil {
		c.d.SourceFailed("commit offsets at shutdown", err)
	}
	cancel()
	cl.CloseAllowingRebalance()
	return nil
}

// run is the state of one Run: the partitions assigned and the client.
type run struct {
	cfg     *config.KafkaConsumer
	d       *consume.Dispatcher
	ctx     context.Context
	cl      *kgo.Client
	commits *committer

	// ready is closed once cl and commits are set: the client may call
	// back before NewClient returns.
	ready chan struct{}

	mu    sync.Mutex
	parts map[topicPartition]*partition
}

type topicPartition struct {
	topic string
	id    int32
}

// poll reads records until ctx ends and queues them to their partitions.
//
// Each poll takes all the client holds: records of a partition left in
// the client when the partition pauses would be dropped and fetched
// again after it resumes, and a fetch brings far more records than a
// batch (up to a megabyte per partition). They are in memory either way;
// max_poll_records bounds the batches that the partitions run.
func (r *run) poll(ctx context.Context) {
	failures := 0
	for {
		fetches := r.cl.PollFetches(ctx)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			r.cl.AllowRebalance()
			return
		}
		failed := false
		fetches.EachError(func(topic string, p int32, err error) {
			failed = true
			if errors.Is(err, context.Canceled) {
				return
			}
			what := "fetch"
			if topic != "" {
				what = fmt.Sprintf("fetch topic %s partition %d", topic, p)
			}
			r.d.SourceFailed(what, err)
		})
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if len(fp.Records) == 0 {
				return
			}
			p := r.partition(fp.Topic, fp.Partition)
			end := fp.HighWatermark
			if !r.cfg.FetchReadUncommitted && fp.LastStableOffset >= 0 {
				end = fp.LastStableOffset
			}
			p.raiseEnd(end)
			p.push(fp.Records)
		})
		empty := fetches.Empty()
		if !empty {
			r.d.SourceOK()
		}
		r.cl.AllowRebalance()
		// A poll that brings only errors comes back at once: wait before
		// the next, so that a lasting failure (a group the brokers
		// refuse) does not spin.
		if failed && empty {
			if !r.d.Backoff(ctx, failures) {
				return
			}
			failures++
		} else {
			failures = 0
		}
	}
}

// partition is the partition of the group's assignment, started when
// missing.
func (r *run) partition(topic string, id int32) *partition {
	k := topicPartition{topic, id}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.parts[k]
	if p == nil {
		p = newPartition(r, topic, id)
		r.parts[k] = p
	}
	return p
}

// assigned starts the partitions given to this member.
func (r *run) assigned(_ context.Context, _ *kgo.Client, tps map[string][]int32) {
	<-r.ready
	for topic, ids := range tps {
		for _, id := range ids {
			r.partition(topic, id)
		}
	}
	r.d.Logger().Info("kafka partitions assigned", "partitions", tps)
}

// revoked stops the partitions taken from this member, once they finished
// their batch, and commits what they ran before the next owner starts.
func (r *run) revoked(ctx context.Context, _ *kgo.Client, tps map[string][]int32) {
	<-r.ready
	r.stop(r.take(tps))
	cctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	if err := r.commits.flush(cctx); err != nil {
		r.d.SourceFailed("commit offsets of revoked partitions", err)
	}
	// A partition whose commit failed is another member's now: its
	// offsets are not ours to commit later.
	r.commits.forget(tps)
	if len(tps) > 0 {
		r.d.Logger().Info("kafka partitions revoked", "partitions", tps)
	}
}

// lost stops the partitions this member lost with its group session
// (fenced, or the session expired): another member may own them already,
// so their offsets are not committed; what ran since the last commit runs
// again there.
func (r *run) lost(_ context.Context, _ *kgo.Client, tps map[string][]int32) {
	<-r.ready
	r.stop(r.take(tps))
	r.commits.forget(tps)
	if len(tps) > 0 {
		r.d.Logger().Warn("kafka partitions lost with the group session", "partitions", tps)
	}
}

// take removes the partitions of tps from the run.
func (r *run) take(tps map[string][]int32) []*partition {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ps []*partition
	for topic, ids := range tps {
		for _, id := range ids {
			k := topicPartition{topic, id}
			if p := r.parts[k]; p != nil {
				ps = append(ps, p)
				delete(r.parts, k)
			}
		}
	}
	return ps
}

// stopAll stops every partition (at shutdown).
func (r *run) stopAll() {
	r.mu.Lock()
	ps := make([]*partition, 0, len(r.parts))
	for k, p := range r.parts {
		ps = append(ps, p)
		delete(r.parts, k)
	}
	r.mu.Unlock()
	r.stop(ps)
}

// stop stops ps and waits until each finished its batch. A paused
// partition is resumed: paused partitions stay paused across
// rebalances, and this member may get it back.
func (r *run) stop(ps []*partition) {
	for _, p := range ps {
		p.cancel()
	}
	for _, p := range ps {
		<-p.exited
		p.unpause()
	}
}

// reportLag reports, every lagInterval, how many records of the assigned
// partitions wait to run: from the end of each partition's log (the high
// watermark, or the last stable offset in read_committed) to the record
// after the last one run. Fetches tell the ends; every endsInterval they
// are asked for as well, for the partitions that fetch nothing while
// paused.
func (r *run) reportLag(ctx context.Context) {
	t := time.NewTicker(lagInterval)
	defer t.Stop()
	adm := kadm.NewClient(r.cl)
	var asked time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(asked) >= endsInterval {
			asked = time.Now()
			r.askEnds(ctx, adm)
		}
		var lag int64
		r.mu.Lock()
		for _, p := range r.parts {
			lag += p.lag()
		}
		r.mu.Unlock()
		r.d.SetLag(lag)
	}
}

// askEnds asks the brokers for the ends of the assigned partitions' logs.
func (r *run) askEnds(ctx context.Context, adm *kadm.Client) {
	ctx, cancel := context.WithTimeout(ctx, lagInterval)
	defer cancel()
	list := adm.ListCommittedOffsets
	if r.cfg.FetchReadUncommitted {
		list = adm.ListEndOffsets
	}
	ends, err := list(ctx, r.cfg.Topics...)
	if err != nil {
		return // the fetches report what fails
	}
	// The client waits for a missing topic without a word: say it here,
	// and have the client look for it now rather than at its next
	// metadata refresh, minutes away.
	missing := false
	for _, topic := range r.cfg.Topics {
		if o, ok := ends.Lookup(topic, -1); ok && o.Err != nil {
			r.d.SourceFailed("topic "+topic, o.Err)
			missing = true
		}
	}
	if missing {
		r.cl.ForceMetadataRefresh()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, p := range r.parts {
		if o, ok := ends.Lookup(k.topic, k.id); ok && o.Err == nil {
			p.raiseEnd(o.Offset)
		}
	}
}
