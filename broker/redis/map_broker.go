package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/pubconv"
	"github.com/gyrehq/gyre/broker/redis/internal/wirepb"
	"github.com/redis/rueidis"
)

// MapBroker is a broker.MapBroker keeping map channels' state and streams
// in Redis and carrying their changes between nodes over Redis pub/sub,
// on the same kinds of setups as the Broker (one Redis, several sharded
// by channel, a cluster, a Sentinel-watched master). Its methods are safe
// for concurrent use.
//
// Every change is one Lua script in the channel's Redis (lua/map_*.lua):
// it takes the channel's next offset, writes the state, appends to the
// stream and publishes the change, so that for every node the order of
// the messages is the order of the offsets. Delivery uses a set of
// pub/sub connections of its own, kept as the Broker keeps its (same
// sharding, reconnection, order per channel, and reports of restored
// channels to a handler that implements broker.SubscriptionLostHandler).
// Expired keys are removed by a goroutine of every running MapBroker; see
// the package documentation, section Map channels.
type MapBroker struct {
	e   *Engine
	cfg Config
	// ps carries the map channels' pub/sub (names base+mapPubSubInfix+channel).
	ps *Broker
	// owner: the MapBroker was made by NewMapBroker and closes its Engine.
	owner bool

	mu      sync.Mutex // orders Run with Close
	running bool
	closed  atomic.Bool
	stop    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

var (
	_ broker.MapBroker     = (*MapBroker)(nil)
	_ broker.HealthChecker = (*MapBroker)(nil)
)

// NewMapBroker connects to Redis as cfg says and returns a MapBroker that
// owns its connections: Close closes them. Use it for map channels kept
// apart from the engine's Redis; Engine.MapBroker shares an Engine's.
func NewMapBroker(cfg Config) (*MapBroker, error) {
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	m := e.MapBroker()
	m.owner = true
	return m, nil
}

func newMapBroker(e *Engine) *MapBroker {
	return &MapBroker{
		e:    e,
		cfg:  e.cfg,
		ps:   newPubSub(e, mapPubSubInfix, " map"),
		stop: make(chan struct{}),
	}
}

// Run starts the pub/sub connections, which hand every change of a
// subscribed channel to h from now on, per channel in offset order, and
// the removal of expired keys. When h implements
// broker.SubscriptionLostHandler it is told of channels whose changes may
// have been missed (see SubscriptionLostHandler). Like Broker.Run it waits
// until the connections are subscribed, failing with an error wrapping
// broker.ErrNotAvailable when that takes too long; they keep trying. It
// may be called once.
func (m *MapBroker) Run(h broker.RunHandler) error {
	if h == nil {
		return errors.New("redis: MapBroker.Run with nil handler")
	}
	m.mu.Lock()
	switch {
	case m.closed.Load():
		m.mu.Unlock()
		return ErrClosed
	case m.running:
		m.mu.Unlock()
		return errors.New("redis: MapBroker.Run called twice")
	}
	m.running = true
	m.wg.Add(1)
	go func() { defer m.wg.Done(); m.expireLoop() }()
	m.mu.Unlock()
	var eh broker.EventHandler = mapEvents{h}
	if l, ok := h.(broker.SubscriptionLostHandler); ok {
		eh = mapEventsLost{mapEvents{h}, l}
	}
	m.ps.backlogTo = h
	return m.ps.Run(eh)
}

// mapEvents hands the map pub/sub's runs to the MapBroker's RunHandler;
// map channels carry nothing else.
type mapEvents struct{ broker.RunHandler }

var errNotMapEvent = errors.New("redis: a map channel carries only changes")

func (mapEvents) HandleJoin(string, *broker.ClientInfo) error  { return errNotMapEvent }
func (mapEvents) HandleLeave(string, *broker.ClientInfo) error { return errNotMapEvent }
func (mapEvents) HandleControl([]byte) error                   { return errNotMapEvent }

// mapEventsLost is mapEvents for a handler that wants to know about lost
// subscriptions.
type mapEventsLost struct {
	mapEvents
	broker.SubscriptionLostHandler
}

// Subscribe subscribes this node to the channel's changes and returns
// once Redis confirmed: every change made after it returns is delivered.
func (m *MapBroker) Subscribe(channel string) error { return m.ps.Subscribe(channel) }

// Unsubscribe stops delivery of the channel's changes to this node.
func (m *MapBroker) Unsubscribe(channel string) error { return m.ps.Unsubscribe(channel) }

// Healthy returns an error while a pub/sub connection is down.
func (m *MapBroker) Healthy() error { return m.ps.Healthy() }

// Close stops delivery and expiry, and waits for their goroutines. A
// MapBroker of NewMapBroker also closes its connections; one of
// Engine.MapBroker leaves them to the Engine's other parts (see Engine).
// Later calls return nil; other methods then return ErrClosed.
func (m *MapBroker) Close() error {
	if m.owner {
		return m.e.Close()
	}
	return m.close()
}

func (m *MapBroker) close() error {
	m.once.Do(func() {
		m.mu.Lock()
		m.closed.Store(true)
		m.mu.Unlock()
		close(m.stop)
		m.wg.Wait()
		_ = m.ps.Close() // never fails
	})
	return nil
}

func (m *MapBroker) checkOpen() error {
	if m.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Publish writes key (lua/map_publish.lua).
func (m *MapBroker) Publish(ctx context.Context, channel, key string, opts broker.MapPublishOptions) (broker.MapUpdateResult, error) {
	switch opts.KeyMode {
	case broker.KeyModeReplace, broker.KeyModeIfNew, broker.KeyModeIfExists:
	default:
		return broker.MapUpdateResult{}, fmt.Errorf("redis: unknown map key mode %q", opts.KeyMode)
	}
	return m.change(ctx, channel, key, opts.Map, mapChange{
		op:             "p",
		entry:          &wirepb.MapEntry{Data: opts.Data, Tags: opts.Tags, Score: opts.Score, Version: opts.Version},
		info:           opts.ClientInfo,
		idempotencyKey: opts.IdempotencyKey,
		idempotentTTL:  opts.IdempotentResultTTL,
		delta:          opts.UseDelta,
		version:        opts.Version,
		versionEpoch:   opts.VersionEpoch,
		keyMode:        opts.KeyMode,
		refresh:        opts.RefreshTTLOnSuppress,
	})
}

// Remove deletes key (lua/map_publish.lua).
func (m *MapBroker) Remove(ctx context.Context, channel, key string, opts broker.MapRemoveOptions) (broker.MapUpdateResult, error) {
	return m.change(ctx, channel, key, opts.Map, mapChange{
		op:             "r",
		entry:          &wirepb.MapEntry{Removed: true},
		info:           opts.ClientInfo,
		idempotencyKey: opts.IdempotencyKey,
		idempotentTTL:  opts.IdempotentResultTTL,
	})
}

// mapChange is what Publish and Remove hand to the script besides the
// channel's settings.
type mapChange struct {
	op string // "p" write, "r" remove
	// entry is the written value or the removal, without offset, time
	// and info, which change sets.
	entry          *wirepb.MapEntry
	info           *broker.ClientInfo
	idempotencyKey string
	idempotentTTL  time.Duration
	delta          bool
	version        uint64
	versionEpoch   string
	keyMode        broker.KeyMode
	refresh        bool
}

func (m *MapBroker) change(ctx context.Context, channel, key string, mo broker.MapOptions, c mapChange) (broker.MapUpdateResult, error) {
	if err := m.checkOpen(); err != nil {
		return broker.MapUpdateResult{}, err
	}
	c.entry.Time = time.Now().UnixMilli()
	entry, err := encodeMapEntry(c.entry, c.info)
	if err != nil {
		return broker.MapUpdateResult{}, err
	}
	ci, si := m.e.locate(channel)
	base := m.e.bases[si]
	keys := mapKeys(base, channel)
	keys = append(keys, keys[0])
	var idemTTL int64
	if c.idempotencyKey != "" {
		keys[len(keys)-1] = mapIdemKey(base, channel, c.idempotencyKey)
		idemTTL = millis(orDefault(c.idempotentTTL, m.cfg.IdempotentResultTTL))
	}
	st := mapSettings(mo)
	args := []string{
		c.op,
		channel,
		key,
		rueidis.BinaryString(entry),
		base + mapPubSubInfix + channel,
		m.e.publishCommand(),
		newEpoch(),
		strconv.Itoa(st.streamSize),
		strconv.FormatInt(st.streamTTL, 10),
		strconv.FormatInt(st.metaTTL, 10),
		strconv.FormatInt(st.keyTTL, 10),
		strconv.FormatInt(idemTTL, 10),
		flag(c.delta),
		strconv.FormatUint(c.version, 10),
		c.versionEpoch,
		string(c.keyMode),
		flag(c.refresh),
		m.ps.durableRestarts,
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.IOTimeout)
	defer cancel()
	// Running it twice is harmless only with an idempotency key: the
	// second run then finds the first's result.
	res, err := execScript(ctx, mapPublishScript, m.e.clients[ci], keys, args, c.idempotencyKey != "").ToArray()
	if err != nil {
		return broker.MapUpdateResult{}, wrapErr("map "+mapOpName(c.op), err)
	}
	return parseMapChangeResult(res)
}

func mapOpName(op string) string {
	if op == "r" {
		return "remove"
	}
	return "publish"
}

func parseMapChangeResult(res []rueidis.RedisMessage) (broker.MapUpdateResult, error) {
	if len(res) != 3 {
		return broker.MapUpdateResult{}, fmt.Errorf("redis: map script returned %d values, want 3", len(res))
	}
	offset, err := res[0].AsInt64()
	if err != nil {
		return broker.MapUpdateResult{}, fmt.Errorf("redis: map script offset: %w", err)
	}
	epoch, err := res[1].ToString()
	if err != nil {
		return broker.MapUpdateResult{}, fmt.Errorf("redis: map script epoch: %w", err)
	}
	reason, err := res[2].ToString()
	if err != nil {
		return broker.MapUpdateResult{}, fmt.Errorf("redis: map script suppress reason: %w", err)
	}
	return broker.MapUpdateResult{
		Position:       broker.StreamPosition{Offset: uint64(offset), Epoch: epoch},
		Suppressed:     reason != "",
		SuppressReason: broker.SuppressReason(reason),
	}, nil
}

// mapTTLs are a channel's MapOptions as the scripts take them: what the
// mode does not use is zero, durations are milliseconds.
type mapTTLs struct {
	streamSize int
	streamTTL  int64
	metaTTL    int64
	keyTTL     int64
}

func mapSettings(mo broker.MapOptions) mapTTLs {
	var s mapTTLs
	if mo.Mode.HasStream() {
		s.streamSize, s.streamTTL = max(mo.StreamSize, 0), millis(max(mo.StreamTTL, 0))
	}
	if mo.Mode.HasExpiry() {
		s.keyTTL = millis(max(mo.KeyTTL, 0))
	}
	// The scripts keep the meta at least until the last key expired
	// (lua/map_common.lua, keepAlive).
	s.metaTTL = millis(max(mo.MetaTTL, 0))
	return s
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// encodeMapEntry encodes e with info (nil for none) as who made it.
func encodeMapEntry(e *wirepb.MapEntry, info *broker.ClientInfo) ([]byte, error) {
	if info != nil {
		b, err := pubconv.ToProtoInfo(info).MarshalVT()
		if err != nil {
			return nil, fmt.Errorf("redis: encode client info: %w", err)
		}
		e.Info = b
	}
	b, err := e.MarshalVT()
	if err != nil {
		return nil, fmt.Errorf("redis: encode map entry: %w", err)
	}
	return b, nil
}

// decodeMapEntry reads a MapEntry of key as a publication. Decoding
// copies, so data may be a view of a reply string.
func decodeMapEntry(key string, data []byte) (*broker.Publication, error) {
	var e wirepb.MapEntry
	if err := e.UnmarshalVT(data); err != nil {
		return nil, fmt.Errorf("redis: decode map entry: %w", err)
	}
	p := &broker.Publication{
		Offset:  e.Offset,
		Data:    e.Data,
		Tags:    e.Tags,
		Time:    e.Time,
		Key:     key,
		Removed: e.Removed,
		Score:   e.Score,
		Version: e.Version,
	}
	if len(e.Info) > 0 {
		info, err := decodeInfo(e.Info)
		if err != nil {
			return nil, fmt.Errorf("redis: decode map entry client info: %w", err)
		}
		p.Info = info
	}
	return p, nil
}

// decodeMapChange decodes a MAP_CHANGE message.
func decodeMapChange(msg *wirepb.Message) (broker.RunPublication, error) {
	pub, err := decodeMapEntry(msg.Key, msg.Publication)
	if err != nil {
		return broker.RunPublication{}, err
	}
	rp := broker.RunPublication{Pub: pub, Position: broker.StreamPosition{Offset: msg.Offset, Epoch: msg.Epoch}, Delta: msg.Delta}
	if msg.Delta && len(msg.Prev) > 0 {
		if rp.Prev, err = decodeMapEntry(msg.Key, msg.Prev); err != nil {
			return broker.RunPublication{}, err
		}
	}
	return rp, nil
}
