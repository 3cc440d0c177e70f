package redis

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// Engine is a connection to one Redis setup (standalone servers, a
// cluster, or a Sentinel-watched master) shared by a Broker, a
// PresenceManager, a Store and a MapBroker. The Engine owns the
// connections: Close the Engine, or the Broker, the PresenceManager and
// (once made) the MapBroker, to release them.
// The Store owns nothing and its Close releases nothing (see Store).
type Engine struct {
	cfg     Config
	log     *slog.Logger
	mode    mode
	clients []rueidis.Client
	// bases holds the key base of each shard (see keys.go): one per
	// cluster hash tag, or the same prefix for every pub/sub shard of a
	// standalone Redis.
	bases []string

	broker   *Broker
	presence *PresenceManager
	store    *Store
	// mapBroker is made by the first MapBroker call.
	mapMu     sync.Mutex
	mapBroker *MapBroker

	refs      atomic.Int32 // parts not closed yet
	closeOnce sync.Once
}

// New connects to Redis as cfg says and returns an Engine. It fails if a
// Redis does not answer within cfg.ConnectTimeout.
func New(cfg Config) (*Engine, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	opts, err := cfg.clientOptions()
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, log: cfg.Logger, mode: cfg.mode()}
	for _, opt := range opts {
		c, err := rueidis.NewClient(opt)
		if err != nil {
			e.closeClients()
			return nil, fmt.Errorf("redis: connect to %v: %w", opt.InitAddress, err)
		}
		e.clients = append(e.clients, c)
	}
	if e.mode == modeCluster && e.clients[0].Mode() != rueidis.ClientModeCluster {
		e.closeClients()
		return nil, errors.New("redis: Config.ClusterAddresses name a server that is not in cluster mode")
	}
	e.bases = e.makeBases()
	e.refs.Store(2)
	e.broker = newBroker(e)
	e.presence = &PresenceManager{e: e}
	e.store = &Store{b: e.broker}
	return e, nil
}

func (e *Engine) makeBases() []string {
	base := e.cfg.Prefix + "."
	if e.mode != modeCluster {
		out := make([]string, e.cfg.PubSubShards)
		for i := range out {
			out[i] = base
		}
		return out
	}
	out := make([]string, e.cfg.ClusterShards)
	for i := range out {
		out[i] = base + "{" + strconv.Itoa(i) + "}."
	}
	return out
}

// Broker returns the engine's broker.Broker.
func (e *Engine) Broker() *Broker { return e.broker }

// PresenceManager returns the engine's broker.PresenceManager.
func (e *Engine) PresenceManager() *PresenceManager { return e.presence }

// Store returns the engine's broker.Store: streams kept in Redis for a
// broker whose pub/sub is elsewhere (NATS).
func (e *Engine) Store() *Store { return e.store }

// MapBroker returns the engine's broker.MapBroker, made on the first
// call. It shares the engine's connections to Redis, and has pub/sub
// connections of its own once Run. Once made, it is one of the parts
// that must all be closed to release the connections (or Close the
// Engine). For map channels in another Redis setup, see NewMapBroker.
func (e *Engine) MapBroker() *MapBroker {
	e.mapMu.Lock()
	defer e.mapMu.Unlock()
	if e.mapBroker == nil {
		e.refs.Add(1)
		e.mapBroker = newMapBroker(e)
	}
	return e.mapBroker
}

// Close closes the Broker, the PresenceManager, the Store, the MapBroker
// if made, and the connections to Redis.
func (e *Engine) Close() error {
	_ = e.store.Close() // never fails
	e.mapMu.Lock()
	mb := e.mapBroker
	e.mapMu.Unlock()
	if mb != nil {
		_ = mb.close() // never fails
	}
	err := e.broker.Close()
	err2 := e.presence.Close()
	e.closeOnce.Do(e.closeClients)
	return errors.Join(err, err2)
}

// release is called once by each part when it closes; the last one closes
// the connections.
func (e *Engine) release() {
	if e.refs.Add(-1) == 0 {
		e.closeOnce.Do(e.closeClients)
	}
}

func (e *Engine) closeClients() {
	for _, c := range e.clients {
		c.Close()
	}
}

// locate returns where a channel lives: the index of its Redis client and
// of its shard (pub/sub connection and, in a cluster, hash tag).
func (e *Engine) locate(channel string) (client, shard int) {
	h := channelHash(channel)
	if len(e.clients) > 1 {
		client = jumpHash(h, len(e.clients))
	}
	if len(e.bases) > 1 {
		// The high half, so that the shard does not follow the client
		// choice, which jump hash makes from the whole key.
		shard = int((h >> 32) % uint64(len(e.bases)))
	}
	return client, shard
}

// publishCommand is the pub/sub publish command: sharded pub/sub in a
// cluster, so that a message goes only to the nodes of its slot.
func (e *Engine) publishCommand() string {
	if e.mode == modeCluster {
		return "SPUBLISH"
	}
	return "PUBLISH"
}
