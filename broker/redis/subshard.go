package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/backlog"
	"github.com/redis/rueidis"
)

const (
	// queueSize is how many pub/sub messages wait for the handler before
	// the connection's reader blocks; Redis then buffers for us, up to its
	// client-output-buffer-limit, past which it drops the connection and
	// we resubscribe and report the loss.
	queueSize = 4096
	// subscribeBatch is how many SUBSCRIBE commands one round trip sends
	// when resubscribing.
	subscribeBatch = 512
)

// The pacing of attempts to bring a pub/sub connection back. Every moment
// the connection stays down after Redis is back is a moment of
// publications this node misses, and more of its subscribers are told
// they lost state; so the wait never exceeds backoffMax, and after a
// connection that was up for backoffStable the first attempt follows at
// once. While Redis stays down an attempt every 125-250 ms per connection
// is a refused connect, which costs Redis nothing.
const (
	backoffMin    = 25 * time.Millisecond
	backoffMax    = 250 * time.Millisecond
	backoffStable = time.Second
	// stillDownEvery spaces the warnings while a connection stays down;
	// the attempts between them log at debug level.
	stillDownEvery = 10 * time.Second
)

// subShard is one pub/sub connection and the channels it carries. A
// goroutine (run) keeps the connection: it subscribes every channel again
// whenever the connection is replaced. The connection's reader hands
// messages to queue in the order Redis sent them, and a second goroutine
// (work) hands them to the EventHandler in that order, so that per channel
// publications arrive in offset order.
type subShard struct {
	b      *Broker
	client rueidis.Client
	where  string // for logs and errors: the Redis address or shard
	base   string // key base of the channels, see keys.go
	prefix string // base + the broker's infix: pub/sub name of a channel minus the channel
	// control is the pub/sub name of control messages when this shard
	// carries them, else empty.
	control string
	// group is the pub/sub name of the publications grouped for this
	// shard's channels (group.go) when this shard carries them, else
	// empty.
	group string
	// probe is the pub/sub name of this connection's backlog probes
	// (see backlog.Queue.SetProbe): messages the node sends itself, which
	// come back behind whatever Redis holds for the connection.
	probe string
	// probes is set by work once its queue is watched; probeOK while the
	// connection has the probe channel subscribed.
	probes  atomic.Pointer[backlog.Queue]
	probeOK atomic.Bool
	sharded bool // SSUBSCRIBE (cluster) rather than SUBSCRIBE
	// patterns marks a connection that carries pattern scopes
	// (patterns.go) instead of channels: channels holds scopes, prefix is
	// the scopes' name prefix, and a loss is reported to a
	// broker.PatternScopeLostHandler.
	patterns bool

	mu       sync.Mutex
	channels map[string]struct{} // channels this node wants, by name
	dc       rueidis.DedicatedClient
	// replID is the replication id of dc's server in a Sentinel setup
	// (see followMaster), else empty.
	replID string
	// resub holds the pub/sub names subscribed again after a loss whose
	// confirmation has not arrived; the confirmation is reported lost.
	resub map[string]struct{}

	// downSince and attempts (failed attempts since) belong to run's
	// goroutine, which session runs on.
	downSince time.Time
	attempts  int
	// lastErr is why the last session ended, for an error that says why
	// the shard did not come up (notUp).
	lastErr atomic.Pointer[error]

	up        atomic.Bool
	ready     chan struct{} // closed the first time the shard is up
	readyOnce sync.Once
	kick      chan struct{} // asks run to replace the connection
	queue     chan event
}

// event is one pub/sub message, or (lost) the report that the channel's
// subscription was restored after an interruption.
type event struct {
	name    string // pub/sub channel name
	payload string
	lost    bool
}

func newSubShard(b *Broker, client rueidis.Client, where, base string, sharded bool) *subShard {
	return &subShard{
		b:        b,
		client:   client,
		where:    where,
		base:     base,
		prefix:   base + b.infix,
		sharded:  sharded,
		channels: make(map[string]struct{}),
		ready:    make(chan struct{}),
		kick:     make(chan struct{}, 1),
		queue:    make(chan event, queueSize),
		probe:    base + probeInfix + newEpoch(),
	}
}

// newPatternShard returns a connection that carries the pattern scopes
// this node subscribed, under key base base: SSUBSCRIBE in a cluster
// (sharded), where the scopes' messages are SPUBLISHes in base's slot,
// SUBSCRIBE elsewhere.
func newPatternShard(b *Broker, client rueidis.Client, where, base string, sharded bool) *subShard {
	s := newSubShard(b, client, where, base, sharded)
	s.prefix = base + scopeInfix
	s.patterns = true
	return s
}

func (s *subShard) pubsubName(channel string) string { return s.prefix + channel }

// run keeps the connection until the broker closes.
func (s *subShard) run() {
	var bo backoff
	s.downSince = time.Now()
	warned := s.downSince
	for {
		upFor, err := s.session()
		if err != nil {
			s.lastErr.Store(&err)
		}
		select {
		case <-s.b.stop:
			return
		default:
		}
		now := time.Now()
		switch {
		case upFor > 0:
			s.downSince, s.attempts, warned = now, 0, now
			// A connection that flaps is lost once per short session.
			s.b.logRepeated("connection lost", s.where, slog.LevelWarn, "redis: pub/sub connection lost, resubscribing", "error", err)
		case now.Sub(warned) >= stillDownEvery:
			s.attempts++
			warned = now
			s.b.log.Warn("redis: pub/sub still down", "redis", s.where, "down_for", now.Sub(s.downSince).Round(time.Millisecond), "attempts", s.attempts, "error", err)
		default:
			s.attempts++
			s.b.log.Debug("redis: pub/sub reconnect failed", "redis", s.where, "attempts", s.attempts, "error", err)
		}
		select {
		case <-s.b.stop:
			return
		case <-time.After(bo.after(upFor)):
		}
	}
}

// backoff spaces the attempts to bring a pub/sub connection back.
type backoff struct{ next time.Duration }

// after returns how long to wait before the next attempt, given how long
// the connection that just ended was up (0: the attempt failed). The
// bound doubles with each attempt, from backoffMin up to backoffMax, and
// starts over after a connection that was up for backoffStable; one that
// dropped sooner (flapping) counts as a failed attempt. The wait is a
// random time between half the bound and the bound, so that nodes that
// lost Redis together do not come back in step.
func (b *backoff) after(upFor time.Duration) time.Duration {
	if upFor >= backoffStable {
		b.next = 0
	}
	d := b.next
	if d == 0 {
		d = backoffMin
	}
	b.next = min(2*d, backoffMax)
	return d/2 + rand.N(d/2+1)
}

// session lives as long as one connection: it subscribes everything and
// waits for the connection to break or the broker to close. upFor is how
// long every channel was subscribed, 0 if they never all were.
func (s *subShard) session() (upFor time.Duration, err error) {
	dc, _ := s.client.Dedicate()
	// Closed, not released: a connection handed back to the pool would
	// keep its subscriptions, and rueidis, speaking RESP2, hands a
	// connection dropped by Redis (CLIENT KILL) back out as it was, so
	// that every later session would fail on it.
	defer dc.Close()
	replID, err := s.serverReplicationID(dc)
	if err != nil {
		s.failed("connection")
		return 0, err
	}
	lost := dc.SetPubSubHooks(rueidis.PubSubHooks{OnMessage: s.onMessage, OnSubscription: s.onSubscription})

	s.mu.Lock()
	names := make([]string, 0, len(s.channels)+1)
	if s.control != "" {
		names = append(names, s.control)
	}
	restored := s.isRestore()
	if restored {
		s.resub = make(map[string]struct{}, len(s.channels))
	}
	for ch := range s.channels {
		name := s.pubsubName(ch)
		names = append(names, name)
		if restored {
			s.resub[name] = struct{}{}
		}
	}
	s.dc, s.replID = dc, replID
	s.mu.Unlock()
	defer func() {
		if q := s.probes.Load(); q != nil {
			q.ProbeLost(q.Sent())
		}
		s.up.Store(false)
		s.mu.Lock()
		s.dc, s.replID, s.resub = nil, "", nil
		s.mu.Unlock()
	}()

	// The group channel before the channels: a restored channel's loss
	// is reported where its subscription is confirmed, and from there on
	// its grouped publications must arrive too.
	if s.group != "" {
		if err := s.subscribe(dc, []string{s.group}); err != nil {
			s.subscribeFailed(err)
			return 0, fmt.Errorf("redis: subscribe %s, which carries broadcasts grouped for the channels of this connection (a Redis ACL must allow it as it allows the channels): %w", s.group, err)
		}
	}
	for i := 0; i < len(names); i += subscribeBatch {
		if err := s.subscribe(dc, names[i:min(i+subscribeBatch, len(names))]); err != nil {
			s.subscribeFailed(err)
			return 0, err
		}
	}
	// Redis answers now: a good moment to give it the scripts.
	s.loadScripts()
	// Without its probe channel (a Redis ACL that does not allow it) the
	// node sees only the backlog in its own queue.
	if err := s.subscribe(dc, []string{s.probe}); err != nil {
		s.b.logRepeated("probe", s.where, slog.LevelWarn, "redis: subscribe the backlog probe channel; this node sees only the backlog in its own queue", "channel", s.probe, "error", err)
		s.probeOK.Store(false)
	} else {
		s.probeOK.Store(true)
	}
	s.up.Store(true)
	s.readyOnce.Do(func() { close(s.ready) })
	upSince := time.Now()
	if restored {
		s.b.log.Info("redis: pub/sub resubscribed", "redis", s.where, "channels", len(names),
			"down_for", upSince.Sub(s.downSince).Round(time.Millisecond), "attempts", s.attempts+1)
	}
	select {
	case e, ok := <-lost:
		err = e
		if !ok || err == nil {
			err = errors.New("redis: connection closed")
		}
		s.failed("connection")
	case <-s.kick:
		err = errors.New("redis: the server dropped a subscription")
		s.failed("connection")
	case <-s.b.stop:
	}
	// A connection that was up counts as up for some time, however
	// coarse the clock.
	return max(time.Since(upSince), 1), err
}

// loadScripts loads the pipelined scripts into the shard's servers each
// time its pub/sub connection starts: Redis has just started, or
// restarted (which dropped the connection), and a publish pipeline that
// meets NOSCRIPT while another connection loads the script meanwhile
// cannot be sent again without reordering its channel, so its publish
// would be refused. Best effort: a pipeline that meets NOSCRIPT still
// sends the script itself.
func (s *subShard) loadScripts() {
	ctx, cancel := context.WithTimeout(context.Background(), s.b.cfg.IOTimeout)
	defer cancel()
	for addr, c := range s.client.Nodes() {
		for _, script := range []*pipelinedScript{publishScript, mapExpireScript} {
			if err := c.Do(ctx, c.B().ScriptLoad().Script(script.body).Build()).Error(); err != nil {
				s.b.logRepeated("script load", s.where, slog.LevelWarn, "redis: SCRIPT LOAD", "server", addr, "error", err)
			}
		}
	}
}

// sendProbe publishes a backlog probe stamped sent to the connection's
// probe channel, off the watcher's goroutine; one that cannot be sent is
// lost.
func (s *subShard) sendProbe(q *backlog.Queue, sent int64) {
	if !s.up.Load() || !s.probeOK.Load() {
		q.ProbeLost(sent)
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.b.cfg.IOTimeout)
		defer cancel()
		stamp := strconv.FormatInt(sent, 10)
		// Typed, so that a cluster client sends it to the probe's slot.
		cmd := s.client.B().Publish().Channel(s.probe).Message(stamp).Build()
		if s.sharded {
			cmd = s.client.B().Spublish().Channel(s.probe).Message(stamp).Build()
		}
		if err := s.client.Do(ctx, cmd).Error(); err != nil {
			q.ProbeLost(sent)
		}
	}()
}

// failed tells Config.OnPubSubError about a failure of kind.
func (s *subShard) failed(kind string) {
	if f := s.b.cfg.OnPubSubError; f != nil {
		f(kind)
	}
}

// subscribeFailed tells Config.OnPubSubError about a subscribe that
// failed with err: refused by Redis (an error reply), or lost with the
// connection.
func (s *subShard) subscribeFailed(err error) {
	var re *rueidis.RedisError
	switch {
	case !errors.As(err, &re) || re == rueidis.Nil:
		s.failed("connection")
	case s.sharded:
		s.failed("subscribe_shard_channel")
	default:
		s.failed("subscribe_channel")
	}
}

// isRestore reports whether channels subscribed now were subscribed
// before, on an earlier connection: every session after the first one.
func (s *subShard) isRestore() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

// subscribe sends one command per name so that the reply to each comes
// with its confirmation: when it returns nil, Redis delivers every message
// published to those channels from then on.
func (s *subShard) subscribe(dc rueidis.DedicatedClient, names []string) error {
	cmds := make(rueidis.Commands, 0, len(names))
	for _, n := range names {
		if s.sharded {
			cmds = append(cmds, dc.B().Ssubscribe().Channel(n).Build())
		} else {
			cmds = append(cmds, dc.B().Subscribe().Channel(n).Build())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.b.cfg.IOTimeout)
	defer cancel()
	for _, r := range dc.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return wrapErr("subscribe on "+s.where, err)
		}
	}
	return nil
}

func (s *subShard) unsubscribe(dc rueidis.DedicatedClient, name string) error {
	var cmd rueidis.Completed
	if s.sharded {
		cmd = dc.B().Sunsubscribe().Channel(name).Build()
	} else {
		cmd = dc.B().Unsubscribe().Channel(name).Build()
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.b.cfg.IOTimeout)
	defer cancel()
	if err := dc.Do(ctx, cmd).Error(); err != nil {
		return wrapErr("unsubscribe on "+s.where, err)
	}
	return nil
}

// add subscribes this node to channel and returns once Redis confirmed.
func (s *subShard) add(channel string) error {
	s.mu.Lock()
	dc := s.dc
	if dc == nil || !s.up.Load() {
		s.mu.Unlock()
		return fmt.Errorf("redis: subscribe %q: pub/sub to %s is down: %w", channel, s.where, broker.ErrNotAvailable)
	}
	s.channels[channel] = struct{}{}
	s.mu.Unlock()
	if err := s.subscribe(dc, []string{s.pubsubName(channel)}); err != nil {
		s.subscribeFailed(err)
		s.mu.Lock()
		delete(s.channels, channel)
		s.mu.Unlock()
		return err
	}
	return nil
}

// remove unsubscribes this node from channel. The channel leaves the set
// first, so that the confirmation is not taken for a drop by the server.
func (s *subShard) remove(channel string) error {
	s.mu.Lock()
	delete(s.channels, channel)
	dc := s.dc
	s.mu.Unlock()
	if dc == nil {
		return nil // the next connection will not subscribe it
	}
	return s.unsubscribe(dc, s.pubsubName(channel))
}

// onMessage runs on the connection's reader goroutine.
func (s *subShard) onMessage(m rueidis.PubSubMessage) {
	s.enqueue(event{name: m.Channel, payload: m.Message})
}

// onSubscription runs on the connection's reader goroutine, in order with
// the messages: a restored channel is reported lost right where its live
// messages start.
func (s *subShard) onSubscription(sub rueidis.PubSubSubscription) {
	switch sub.Kind {
	case "subscribe", "ssubscribe":
		s.mu.Lock()
		_, restored := s.resub[sub.Channel]
		delete(s.resub, sub.Channel)
		s.mu.Unlock()
		if restored {
			s.enqueue(event{name: sub.Channel, lost: true})
		}
	case "unsubscribe", "sunsubscribe":
		// Redis unsubscribes by itself when a cluster slot moves; a
		// channel we still want needs a new connection (to the new owner).
		if !s.wants(sub.Channel) {
			return
		}
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// notUp is the error of a Run that gave up waiting for the shard: with
// why its last attempt failed, when one did.
func (s *subShard) notUp() error {
	if err := s.lastErr.Load(); err != nil {
		return fmt.Errorf("redis: pub/sub to %s did not come up: %w: %w", s.where, *err, broker.ErrNotAvailable)
	}
	return fmt.Errorf("redis: pub/sub to %s did not come up: %w", s.where, broker.ErrNotAvailable)
}

func (s *subShard) wants(name string) bool {
	if (name != "" && (name == s.control || name == s.group)) || name == s.probe {
		return true
	}
	ch, ok := strings.CutPrefix(name, s.prefix)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok = s.channels[ch]
	return ok
}

func (s *subShard) enqueue(ev event) {
	select {
	case s.queue <- ev:
	case <-s.b.stop:
	}
}

// healthy returns an error while the connection is down.
func (s *subShard) healthy() error {
	if !s.up.Load() {
		return fmt.Errorf("redis: pub/sub to %s is down: %w", s.where, broker.ErrNotAvailable)
	}
	return nil
}
