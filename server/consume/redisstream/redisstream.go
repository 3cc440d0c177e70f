package redisstream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
)

// Timings of the readers. Variables, not constants, so that this
// package's tests may shorten them.
var (
	// readCount is the most entries a reader takes at once: one batch
	// for the dispatcher, one PublishMany.
	readCount = 256
	// blockFor is how long a read waits for new entries. A reader stops
	// only between reads (a read cut short could take entries and drop
	// them), so it bounds how long shutdown waits for an idle reader.
	blockFor = time.Second
	// reclaimEvery bounds the time between two looks for entries that
	// dead consumers left (visibility_timeout when shorter).
	reclaimEvery = 5 * time.Second
	// lagEvery is how often the lag is asked of Redis.
	lagEvery = time.Second
)

// minLeaseTTL is the shortest life of a stream's lease.
const minLeaseTTL = 100 * time.Millisecond

// Defaults of zero fields of config.RedisStreamConsumer.
const (
	defaultVisibilityTimeout = 30 * time.Second
	defaultPayloadValue      = "payload"
)

// Consumer reads the streams of one redis_stream consumer.
type Consumer struct {
	cfg config.RedisStreamConsumer
	d   *consume.Dispatcher
	// opts are the clients' options, one per Redis (shard); labels name
	// them in positions when there are several (" on host:port").
	opts   []rueidis.ClientOption
	labels []string
	// name starts the consumer names of this consumer in the group.
	name string
	// ioTimeout bounds a command that does not block.
	ioTimeout time.Duration
}

var _ consume.Consumer = (*Consumer)(nil)

// New makes the consumer of cfg, reaching Redis as rc says. It does not
// connect: Run does, and keeps trying while Redis is down.
func New(cfg config.RedisStreamConsumer, rc redis.Config, d *consume.Dispatcher) (consume.Consumer, error) {
	if len(cfg.Streams) == 0 {
		return nil, errors.New("redisstream: no streams")
	}
	seen := map[string]bool{}
	for _, s := range cfg.Streams {
		if s == "" {
			return nil, errors.New("redisstream: an empty stream key")
		}
		if seen[s] {
			return nil, fmt.Errorf("redisstream: stream %q listed twice", s)
		}
		seen[s] = true
	}
	if cfg.ConsumerGroup == "" {
		return nil, errors.New("redisstream: no consumer_group")
	}
	if cfg.NumWorkers < 0 || cfg.VisibilityTimeout < 0 {
		return nil, fmt.Errorf("redisstream: num_workers %d and visibility_timeout %v must not be negative", cfg.NumWorkers, cfg.VisibilityTimeout)
	}
	cfg.NumWorkers = max(cfg.NumWorkers, 1)
	if cfg.VisibilityTimeout == 0 {
		cfg.VisibilityTimeout = defaultVisibilityTimeout
	}
	if cfg.PayloadValue == "" {
		cfg.PayloadValue = defaultPayloadValue
	}
	opts, err := rc.ClientOptions()
	if err != nil {
		return nil, fmt.Errorf("redisstream: %w", err)
	}
	c := &Consumer{cfg: cfg, d: d, opts: opts, labels: make([]string, len(opts)), name: consumerName()}
	if len(opts) > 1 {
		for i, o := range opts {
			c.labels[i] = " on " + o.InitAddress[0]
		}
	}
	c.ioTimeout = opts[0].ConnWriteTimeout
	return c, nil
}

// consumerName is this host's name and a random part, so that two
// processes on one host never share a name: a consumer re-reads the
// entries pending under its name as its own.
func consumerName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "gyre"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return strings.ReplaceAll(host, " ", "_") + "-" + hex.EncodeToString(b[:])
}

// stream is one stream key on one Redis.
type stream struct {
	key string
	// what names the stream in log lines and positions.
	what string
	// lag is the group's lag plus its pending entries, -1 unknown.
	lag atomic.Int64

	mu sync.Mutex
	// last is the newest entry ID known delivered to the group, where a
	// group that went missing is made again; "" before any.
	last string
}

// delivered records that the group delivered id.
func (s *stream) delivered(id string) {
	s.mu.Lock()
	if s.last == "" || idLess(s.last, id) {
		s.last = id
	}
	s.mu.Unlock()
}

// since is where to make the group: after the last entry delivered, or
// at the end of the stream ("$") when none is known.
func (s *stream) since() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == "" {
		return "$"
	}
	return s.last
}

// Run reads the streams on every Redis until ctx ends, then lets each
// reader finish and acknowledge its batch and returns nil. Redis being
// unreachable is reported through the dispatcher and waited out.
func (c *Consumer) Run(ctx context.Context) error {
	var all []*stream
	var wg sync.WaitGroup
	for i := range c.opts {
		streams := make([]*stream, len(c.cfg.Streams))
		for j, key := range c.cfg.Streams {
			streams[j] = &stream{key: key, what: "stream " + key + c.labels[i]}
			streams[j].lag.Store(-1)
		}
		all = append(all, streams...)
		wg.Go(func() { c.runShard(ctx, c.opts[i], streams) })
	}
	wg.Go(func() { c.reportLag(ctx, all) })
	wg.Wait()
	return nil
}

// runShard connects to one Redis and runs the readers of its streams.
func (c *Consumer) runShard(ctx context.Context, opt rueidis.ClientOption, streams []*stream) {
	client, ok := c.connect(ctx, opt)
	if !ok {
		return
	}
	defer client.Close()
	var wg sync.WaitGroup
	var names []string
	for _, s := range streams {
		for i := range c.cfg.NumWorkers {
			r := &reader{c: c, client: client, s: s, name: fmt.Sprintf("%s-%d", c.name, i)}
			if c.cfg.NumWorkers == 1 {
				// A floor, so that a tiny visibility_timeout does not have
				// nodes renewing and losing the lease without end.
				ttl := max(c.cfg.VisibilityTimeout, minLeaseTTL)
				r.lease = &lease{key: leaseKey(c.cfg.Prefix, c.cfg.ConsumerGroup, s.key), token: r.name, ttl: ttl}
			}
			wg.Go(func() { r.run(ctx) })
			if s == streams[0] {
				names = append(names, r.name)
			}
		}
	}
	wg.Go(func() { c.pollLag(ctx, client, streams) })
	wg.Wait()
	for _, s := range streams {
		c.leave(client, s, names)
	}
}

// connect makes the client of one Redis, trying again until it answers
// or ctx ends.
func (c *Consumer) connect(ctx context.Context, opt rueidis.ClientOption) (rueidis.Client, bool) {
	for attempt := 0; ; attempt++ {
		client, err := rueidis.NewClient(opt)
		if err == nil {
			return client, true
		}
		c.d.SourceFailed("connect to "+strings.Join(opt.InitAddress, ","), err)
		if !c.d.Backoff(ctx, attempt) {
			return nil, false
		}
	}
}

// reportLag tells the dispatcher the sum of the streams' lags, unknown
// when one of them is.
func (c *Consumer) reportLag(ctx context.Context, streams []*stream) {
	t := time.NewTicker(lagEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var sum int64
		for _, s := range streams {
			n := s.lag.Load()
			if n < 0 {
				sum = -1
				break
			}
			sum += n
		}
		c.d.SetLag(sum)
	}
}

// timeout is a context for one command that does not block, detached
// from the consumer's stop signal: a command cut short could take
// entries and drop them.
func (c *Consumer) timeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.ioTimeout)
}
