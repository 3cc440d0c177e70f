package nats

import (
	"errors"
	"fmt"
	"hash/maphash"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/backlog"
)

// ErrNoHistory is returned for a publication that needs a stream (history,
// an idempotency key, a version) by a broker without a Store.
var ErrNoHistory = fmt.Errorf("nats broker: no history: publications with history, idempotency keys or versions need a store (broker.nats.jetstream, or broker.type redisnats): %w", broker.ErrNotSupported)

// Broker carries publications, join/leave and control messages between
// nodes over core NATS, and keeps history in its Store when it has one.
type Broker struct {
	cfg         Config
	nc          *natsgo.Conn
	store       broker.Store
	channelBase string // "<prefix>.c."
	control     string // "<prefix>.control"
	replace     *strings.Replacer
	unreplace   *strings.Replacer

	// gen counts the connections made to NATS: a worker that sees it
	// change knows that its subscriptions were down in between.
	gen  atomic.Uint64
	seed maphash.Seed

	h          broker.EventHandler
	lost       broker.SubscriptionLostHandler
	scopesLost broker.PatternScopeLostHandler
	// backlog tells h when the workers' queues fall behind.
	backlog    backlog.Meter
	workers    []*worker
	controlSub *natsgo.Subscription

	mu sync.Mutex
	// subs are this node's subscriptions: a channel's, or a pattern's.
	subs   map[subKey]*natsgo.Subscription
	owners map[*natsgo.Subscription]subKey

	// unsent are stored publications whose send failed (unsentMessage).
	unsentMu sync.Mutex
	unsent   []unsentMessage

	closed    atomic.Bool
	closeOnce sync.Once
}

// subKey names a subscription: a channel (scope empty), or a pattern of
// a scope.
type subKey struct {
	scope, name string
}

// New connects to NATS. It fails when NATS cannot be reached within the
// dial timeout; once connected, the broker reconnects by itself for as
// long as it runs.
func New(cfg Config) (*Broker, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	b := &Broker{
		cfg:         cfg,
		store:       cfg.Store,
		channelBase: cfg.Prefix + ".c.",
		control:     cfg.Prefix + ".control",
		seed:        maphash.MakeSeed(),
		subs:        make(map[subKey]*natsgo.Subscription),
		owners:      make(map[*natsgo.Subscription]subKey),
	}
	if r := cfg.RawMode.ChannelReplacements; len(r) > 0 {
		var fwd, back []string
		for from, to := range r {
			fwd = append(fwd, from, to)
			back = append(back, to, from)
		}
		b.replace, b.unreplace = strings.NewReplacer(fwd...), strings.NewReplacer(back...)
	}
	opts := []natsgo.Option{
		natsgo.Name(cfg.Name),
		natsgo.Timeout(cfg.DialTimeout),
		natsgo.FlusherTimeout(cfg.WriteTimeout),
		natsgo.MaxReconnects(-1),
		natsgo.ReconnectWait(250 * time.Millisecond),
		// A publish while disconnected fails at once rather than waiting
		// in a buffer that a long outage would lose anyway: the publisher
		// hears of it.
		natsgo.ReconnectBufSize(-1),
		natsgo.SetCustomDialer(&countingDialer{gen: &b.gen, d: net.Dialer{Timeout: cfg.DialTimeout}}),
		natsgo.DisconnectErrHandler(b.disconnected),
		natsgo.ReconnectHandler(b.reconnected),
		natsgo.ErrorHandler(b.asyncError),
	}
	if cfg.TLS != nil {
		opts = append(opts, natsgo.Secure(cfg.TLS))
	}
	nc, err := natsgo.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats broker: connect to %s: %w", redactURL(cfg.URL), err)
	}
	b.nc = nc
	return b, nil
}

// countingDialer dials NATS and counts the connections it makes.
type countingDialer struct {
	gen *atomic.Uint64
	d   net.Dialer
}

func (c *countingDialer) Dial(network, address string) (net.Conn, error) {
	conn, err := c.d.Dial(network, address)
	if err == nil {
		c.gen.Add(1)
	}
	return conn, err
}

// Run subscribes the control subject and starts the workers that hand
// what arrives to h.
func (b *Broker) Run(h broker.EventHandler) error {
	b.h = h
	b.lost, _ = h.(broker.SubscriptionLostHandler)
	b.scopesLost, _ = h.(broker.PatternScopeLostHandler)
	b.backlog.SetHandler(h)
	b.workers = make([]*worker, b.cfg.Workers)
	for i := range b.workers {
		b.workers[i] = newWorker(b)
		go b.workers[i].run()
	}
	sub, err := b.nc.Subscribe(b.control, func(m *natsgo.Msg) {
		if err := h.HandleControl(m.Data); err != nil {
			b.cfg.Logger.Error("nats broker: control message", "error", err)
		}
	})
	if err != nil {
		return fmt.Errorf("nats broker: subscribe %s: %w", b.control, err)
	}
	// Control messages are few and must not be dropped for a slow reader.
	_ = sub.SetPendingLimits(-1, -1)
	b.controlSub = sub
	if err := b.nc.FlushTimeout(b.cfg.WriteTimeout); err != nil {
		return fmt.Errorf("nats broker: subscribe %s: %w", b.control, err)
	}
	b.cfg.Logger.Debug("nats broker running", "url", redactURL(b.cfg.URL), "prefix", b.cfg.Prefix,
		"raw_mode", b.cfg.RawMode.Enabled, "history", b.store != nil)
	return nil
}

// workerOf is the worker that serves a subscription: every message of it
// goes through that worker, in order.
func (b *Broker) workerOf(k subKey) *worker {
	var h maphash.Hash
	h.SetSeed(b.seed)
	h.WriteString(k.scope)
	h.WriteByte(0)
	h.WriteString(k.name)
	return b.workers[h.Sum64()%uint64(len(b.workers))]
}

// Subscribe subscribes the channel's subject and waits until NATS has it.
// With a store it reads the channel's stream top, from which the broker
// puts publications in order.
func (b *Broker) Subscribe(channel string) error {
	return b.subscribe(subKey{name: channel}, b.channelSubject(channel))
}

// Unsubscribe drops the channel's subscription.
func (b *Broker) Unsubscribe(channel string) error {
	return b.unsubscribe(subKey{name: channel})
}

// SubscribePatternScope does nothing: each pattern is subscribed on its
// own (SubscribePattern).
func (b *Broker) SubscribePatternScope(string) error { return nil }

// UnsubscribePatternScope does nothing, as SubscribePatternScope.
func (b *Broker) UnsubscribePatternScope(string) error { return nil }

// SubscribePattern subscribes the pattern's subject, with NATS wildcards.
func (b *Broker) SubscribePattern(scope, name string) error {
	return b.subscribe(subKey{scope: scope, name: name}, b.patternSubject(scope, name))
}

// UnsubscribePattern drops the pattern's subscription.
func (b *Broker) UnsubscribePattern(scope, name string) error {
	return b.unsubscribe(subKey{scope: scope, name: name})
}

func (b *Broker) subscribe(k subKey, subject string) error {
	if err := b.available(); err != nil {
		return err
	}
	w := b.workerOf(k)
	b.mu.Lock()
	if _, ok := b.subs[k]; ok {
		b.mu.Unlock()
		return nil
	}
	if k.scope == "" && b.store != nil {
		// Publications arriving before the stream top is known wait.
		w.track(k.name)
	}
	sub, err := b.nc.ChanSubscribe(subject, w.in)
	if err != nil {
		b.mu.Unlock()
		w.untrack(k.name)
		return fmt.Errorf("nats broker: subscribe %s: %w: %w", subject, err, broker.ErrNotAvailable)
	}
	b.subs[k] = sub
	b.owners[sub] = k
	b.mu.Unlock()
	if err := b.nc.FlushTimeout(b.cfg.WriteTimeout); err != nil {
		_ = b.unsubscribe(k)
		return fmt.Errorf("nats broker: subscribe %s: %w: %w", subject, err, broker.ErrNotAvailable)
	}
	if k.scope == "" && b.store != nil {
		// Everything appended from now on arrives through the
		// subscription: the top now is where the order starts.
		_, top, err := b.store.History(k.name, broker.HistoryOptions{Peek: true})
		if err != nil {
			_ = b.unsubscribe(k)
			return fmt.Errorf("nats broker: subscribe %s: stream top: %w", k.name, err)
		}
		w.ready(k.name, top)
	}
	return nil
}

func (b *Broker) unsubscribe(k subKey) error {
	b.mu.Lock()
	sub, ok := b.subs[k]
	if ok {
		delete(b.subs, k)
		delete(b.owners, sub)
	}
	b.mu.Unlock()
	if !ok {
		return nil
	}
	if k.scope == "" {
		w := b.workerOf(k)
		w.forget(k.name)
		if b.store != nil {
			w.untrack(k.name)
		}
	}
	if err := sub.Unsubscribe(); err != nil && !errors.Is(err, natsgo.ErrConnectionClosed) && !errors.Is(err, natsgo.ErrBadSubscription) {
		return fmt.Errorf("nats broker: unsubscribe %s: %w", sub.Subject, err)
	}
	return nil
}

// available fails while the broker is closed or NATS is not connected:
// a subscription made then would miss what is published until NATS is
// back, and a publication would be lost.
func (b *Broker) available() error {
	if b.closed.Load() {
		return fmt.Errorf("nats broker: closed: %w", broker.ErrNotAvailable)
	}
	if s := b.nc.Status(); s != natsgo.CONNECTED {
		return fmt.Errorf("nats broker: not connected to NATS (%s): %w", s, broker.ErrNotAvailable)
	}
	return nil
}

// Healthy reports an error while NATS is not connected (or the store is
// unhealthy).
func (b *Broker) Healthy() error {
	if err := b.available(); err != nil {
		return err
	}
	if hc, ok := b.store.(broker.HealthChecker); ok {
		return hc.Healthy()
	}
	return nil
}

// PublishJoin sends a join event on the channel's subject (not in raw
// mode, whose subjects carry bare data).
func (b *Broker) PublishJoin(channel string, info *broker.ClientInfo) error {
	return b.publishEvent(joinMessage, channel, info)
}

// PublishLeave sends a leave event, as PublishJoin.
func (b *Broker) PublishLeave(channel string, info *broker.ClientInfo) error {
	return b.publishEvent(leaveMessage, channel, info)
}

func (b *Broker) publishEvent(kind messageKind, channel string, info *broker.ClientInfo) error {
	if b.cfg.RawMode.Enabled {
		return nil
	}
	data, err := encodeEvent(kind, channel, info)
	if err != nil {
		return err
	}
	return b.send(b.channelSubject(channel), data)
}

// PublishControl sends data to every node: the engine ignores what is
// addressed to another.
func (b *Broker) PublishControl(data []byte, _ string) error {
	return b.send(b.control, data)
}

func (b *Broker) send(subject string, data []byte) error {
	if err := b.nc.Publish(subject, data); err != nil {
		if errors.Is(err, natsgo.ErrMaxPayload) {
			return fmt.Errorf("nats broker: publish to %s: %w", subject, err)
		}
		return fmt.Errorf("nats broker: publish to %s: %w: %w", subject, err, broker.ErrNotAvailable)
	}
	return nil
}

// History reads the channel's stream from the store.
func (b *Broker) History(channel string, opts broker.HistoryOptions) ([]*broker.Publication, broker.StreamPosition, error) {
	if b.store == nil {
		return nil, broker.StreamPosition{}, ErrNoHistory
	}
	return b.store.History(channel, opts)
}

// peekTTL is the meta TTL of the broker's own reads of a stream: stores
// never shorten a meta's life, so the shortest keeps the namespace's
// history_meta_ttl in charge (a zero would mean the store's default).
const peekTTL = time.Millisecond

// RemoveHistory drops the channel's stored publications.
func (b *Broker) RemoveHistory(channel string) error {
	if b.store == nil {
		return ErrNoHistory
	}
	return b.store.RemoveHistory(channel)
}

// Close stops the workers, closes the connection and the store.
func (b *Broker) Close() error {
	var err error
	b.closeOnce.Do(func() {
		b.closed.Store(true)
		b.nc.Close()
		for _, w := range b.workers {
			w.stop()
		}
		if b.store != nil {
			err = b.store.Close()
		}
	})
	return err
}

// disconnected runs when the connection to NATS drops.
func (b *Broker) disconnected(_ *natsgo.Conn, err error) {
	if b.closed.Load() {
		return
	}
	b.cfg.Logger.Warn("nats broker: disconnected from NATS; reconnecting", "error", err)
}

// reconnected runs once the client is connected again and has
// subscribed everything again: the workers tell the engine what may have
// been missed in between.
func (b *Broker) reconnected(nc *natsgo.Conn) {
	b.cfg.Logger.Info("nats broker: reconnected to NATS", "url", redactURL(nc.ConnectedUrl()))
	b.resendUnsent()
	for _, w := range b.workers {
		w.wakeUp()
	}
}

// asyncError runs for errors NATS's client reports on its own: a slow
// consumer, whose messages it dropped, is a loss to report.
func (b *Broker) asyncError(_ *natsgo.Conn, sub *natsgo.Subscription, err error) {
	if sub != nil && errors.Is(err, natsgo.ErrSlowConsumer) {
		b.mu.Lock()
		k, ok := b.owners[sub]
		b.mu.Unlock()
		if ok {
			b.cfg.Logger.Warn("nats broker: messages dropped for a slow reader", "subject", sub.Subject)
			b.workerOf(k).dropped(k)
		}
		return
	}
	b.cfg.Logger.Error("nats broker: NATS error", "error", err)
}

// redactURL drops passwords and tokens from NATS URLs for logs.
func redactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, u := range parts {
		if at := strings.LastIndex(u, "@"); at >= 0 {
			if s := strings.Index(u, "://"); s >= 0 && s < at {
				parts[i] = u[:s+3] + "***" + u[at:]
			}
		}
	}
	return strings.Join(parts, ",")
}
