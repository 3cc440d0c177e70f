package gyre

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/memory"
	"github.com/gyrehq/gyre/internal/controlpb"
	"github.com/gyrehq/gyre/internal/faillog"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/token"
)

// logBrokerFailure counts a failed broker operation of kind op (see
// Observer.BrokerFailed) and writes its line, met on behalf of a client or
// a command: while the broker is down every one of them fails, so the
// lines are limited per message to a few a second and a count. msg must
// come from a fixed set.
func (n *Node) logBrokerFailure(op string, level slog.Level, msg string, attrs ...any) {
	n.obs.BrokerFailed(op)
	n.fails.Add(msg, level, msg, attrs...)
}

// Node is one Gyre engine: it holds the connections of this process, talks
// to the broker, and serves the library API. Create it with NewNode,
// register handlers, call Run, then mount transport handlers.
type Node struct {
	id   string
	name string
	cfg  Config
	log  *slog.Logger
	// occupancy hands this node's first and last subscribers (of channels
	// with StateEvents) and users to Config.Occupancy; nil without one.
	occupancy        *occupancySync
	occupancyHandler OccupancyHandlerFunc
	// fails rate-limits the lines of broker failures, which come once per
	// client or command while the broker is down (see logBrokerFailure).
	fails *faillog.Log
	obs   Observer
	// transports numbers the transport names of the clients, for the
	// tallies of fan-outs (see deliveries).
	transports transportSlots
	// rates holds the command rate limits; nil when none are set, so the
	// command path pays one nil check.
	rates *rateLimits
	// decoder reads clients' commands with the configured bounds.
	decoder protocol.CommandDecoder
	broker  broker.Broker
	// direct is broker when it delivers within PublishMany (bursts use
	// it), else nil; found once rather than asserted on every publish.
	direct broker.DirectPublisher
	// bursts holds the *burst values publishing and fan-outs use.
	bursts sync.Pool
	// patterns is broker as a PatternBroker, nil when it carries no
	// publications to pattern subscriptions.
	patterns broker.PatternBroker
	presence broker.PresenceManager
	// mapBroker keeps map channels; nil when none is configured.
	mapBroker broker.MapBroker
	hub       *hub
	// backpressure holds publishes back while a node is behind
	// (backpressure.go).
	backpressure *backpressure
	// lossLog sums interrupted broker subscriptions into a line per
	// episode.
	lossLog lossLog
	// polls holds the shared-poll channels (sharedpoll_node.go).
	polls     *pollManager
	startedAt time.Time

	rules        atomic.Pointer[channelRules]
	verifier     atomic.Pointer[token.Verifier]
	subVerifier  atomic.Pointer[token.Verifier]
	pinger       *pinger
	shutdownOnce sync.Once
	closing      atomic.Bool
	done         chan struct{}
	wg           sync.WaitGroup

	handlers handlers
	nodes    nodeRegistry
	// published counts the publications this node published; load holds
	// what the last announce measured from it (see load.go).
	published atomic.Int64
	load      loadMeter
	// surveys are the ClusterChannels calls waiting for other nodes.
	surveys channelSurveys
	// live holds every client whose transport is not closed yet,
	// connected or not, and liveClients counts them: Shutdown closes them
	// all and waits for their close frames.
	live sync.Map // *Client -> struct{}
	// metas holds the meta of the connections that have one (Client.Meta).
	metas       sync.Map // *Client -> []byte
	liveClients atomic.Int64
	// sessions holds the emulated connections (see emulation.go).
	sessions sessionRegistry
}

type handlers struct {
	connecting    ConnectingHandler
	connect       ConnectHandler
	subscribe     SubscribeHandler
	publish       PublishHandler
	mapPublish    MapPublishHandler
	mapRemove     MapRemoveHandler
	presence      ChannelPermissionHandler
	presenceStats ChannelPermissionHandler
	history       ChannelPermissionHandler
	rpc           RPCHandler
	message       MessageHandler
	refresh       RefreshHandler
	serverRefresh RefreshHandler
	subRefresh    SubRefreshHandler
	unsubscribe   UnsubscribeHandler
	disconnect    DisconnectHandler
	cacheEmpty    CacheEmptyHandler

	sharedPollRefresh SharedPollRefreshHandler
	track             TrackHandler
}

// NewNode validates cfg, fills its defaults and creates a node. Nothing
// runs until Run.
func NewNode(cfg Config) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rates, err := newRateLimits(cfg.RateLimit)
	if err != nil {
		return nil, err
	}
	n := &Node{
		rates:     rates,
		decoder:   protocol.CommandDecoder{MaxJSONDepth: cfg.MaxJSONDepth},
		id:        newID(),
		cfg:       cfg,
		log:       cfg.Logger,
		fails:     faillog.New(cfg.Logger),
		obs:       cfg.Observer,
		hub:       newHub(),
		done:      make(chan struct{}),
		startedAt: time.Now(),
	}
	n.polls = newPollManager(n, cfg.SharedPollConcurrency)
	n.backpressure = newBackpressure(n, cfg.PublishHoldTimeout)
	n.name = cfg.Name
	if n.name == "" {
		n.name, _ = os.Hostname()
	}
	if err := n.SetChannelConfig(cfg.Channels); err != nil {
		return nil, err
	}
	if err := n.SetTokenConfig(cfg.Token, cfg.SubscriptionToken); err != nil {
		return nil, err
	}
	n.broker = cfg.Broker
	if n.broker == nil {
		b, err := memory.NewBroker(memory.Config{})
		if err != nil {
			return nil, fmt.Errorf("gyre: memory broker: %w", err)
		}
		n.broker = b
	}
	n.direct, _ = n.broker.(broker.DirectPublisher)
	n.patterns, _ = n.broker.(broker.PatternBroker)
	if err := n.checkPatternSupport(n.rules.Load()); err != nil {
		return nil, err
	}
	n.mapBroker = cfg.MapBroker
	n.presence = cfg.PresenceManager
	if n.presence == nil {
		pm, err := memory.NewPresenceManager(memory.PresenceConfig{})
		if err != nil {
			return nil, fmt.Errorf("gyre: memory presence: %w", err)
		}
		n.presence = pm
	}
	n.pinger = newPinger(n, cfg.PingInterval, cfg.PongTimeout)
	if cfg.Occupancy != nil {
		o := newOccupancySync(cfg.Occupancy, n.log)
		n.occupancy = o
		if cfg.UserStatusEvents {
			n.hub.onUser = func(user string, online bool, info []byte) {
				o.set(broker.OccupancyUser, user, online, info)
			}
		}
		go o.run()
	}
	return n, nil
}

// SetChannelConfig replaces the channel rules. New subscriptions and
// commands use them at once; existing subscriptions keep what they got.
func (n *Node) SetChannelConfig(cfg ChannelConfig) error {
	r, err := newChannelRules(cfg, n.cfg.PresenceUpdateInterval)
	if err != nil {
		return err
	}
	if n.broker != nil {
		if err := n.checkPatternSupport(r); err != nil {
			return err
		}
	}
	if err := n.checkOccupancy(r); err != nil {
		return err
	}
	r.keepDeltaSeen(n.rules.Load())
	n.rules.Store(r)
	return nil
}

// SetTokenConfig replaces the keys that verify connection and
// subscription tokens.
func (n *Node) SetTokenConfig(conn token.Config, sub SubscriptionTokenConfig) error {
	v, err := newVerifier(conn)
	if err != nil {
		return fmt.Errorf("gyre: connection token: %w", err)
	}
	sv := v
	if sub.Enabled {
		if sv, err = newVerifier(sub.Config); err != nil {
			return fmt.Errorf("gyre: subscription token: %w", err)
		}
	}
	n.verifier.Store(v)
	n.subVerifier.Store(sv)
	return nil
}

// newVerifier returns nil when no key is configured (and signatures are
// checked): tokens are refused.
func newVerifier(cfg token.Config) (*token.Verifier, error) {
	if cfg.HMACSecretKey == "" && cfg.RSAPublicKey == "" && cfg.ECDSAPublicKey == "" && cfg.JWKSPublicEndpoint == "" &&
		!cfg.InsecureSkipSignatureVerify {
		return nil, nil
	}
	return token.NewVerifier(cfg)
}

// ID is the node's unique id, new at every start.
func (n *Node) ID() string { return n.id }

// Name is the node's name.
func (n *Node) Name() string { return n.name }

// Logger returns the node's logger.
func (n *Node) Logger() *slog.Logger { return n.log }

// OnConnecting sets the handler that decides connection attempts.
// Handlers must be set before Run.
func (n *Node) OnConnecting(h ConnectingHandler) { n.handlers.connecting = h }

// OnConnect sets the handler called when a connection is accepted.
func (n *Node) OnConnect(h ConnectHandler) { n.handlers.connect = h }

// OnSubscribe sets the handler that decides client subscriptions.
func (n *Node) OnSubscribe(h SubscribeHandler) { n.handlers.subscribe = h }

// OnCacheEmpty sets the handler asked to publish the state of a channel
// with CacheEmptyEvents whose subscriber in cache recovery mode found no
// publication.
func (n *Node) OnCacheEmpty(h CacheEmptyHandler) { n.handlers.cacheEmpty = h }

// OnPublish sets the handler that decides client publications.
func (n *Node) OnPublish(h PublishHandler) { n.handlers.publish = h }

// OnMapPublish sets the handler that decides clients' writes into map
// channels.
func (n *Node) OnMapPublish(h MapPublishHandler) { n.handlers.mapPublish = h }

// OnMapRemove sets the handler that decides clients' removals from map
// channels.
func (n *Node) OnMapRemove(h MapRemoveHandler) { n.handlers.mapRemove = h }

// OnPresence sets the handler that decides presence commands.
func (n *Node) OnPresence(h ChannelPermissionHandler) { n.handlers.presence = h }

// OnPresenceStats sets the handler that decides presence_stats commands.
func (n *Node) OnPresenceStats(h ChannelPermissionHandler) { n.handlers.presenceStats = h }

// OnHistory sets the handler that decides history commands.
func (n *Node) OnHistory(h ChannelPermissionHandler) { n.handlers.history = h }

// OnRPC sets the handler of RPC calls.
func (n *Node) OnRPC(h RPCHandler) { n.handlers.rpc = h }

// OnMessage sets the handler of asynchronous client messages (send).
// Without one, a client that sends is disconnected with 3508 (not
// available), as Centrifugo does: send has no reply to carry an error.
func (n *Node) OnMessage(h MessageHandler) { n.handlers.message = h }

// OnRefresh sets the handler of connection refreshes.
func (n *Node) OnRefresh(h RefreshHandler) { n.handlers.refresh = h }

// OnServerSideRefresh makes connections refresh on the server side: an
// expiring connection is not told to refresh (its connect result carries
// no ttl), and when its ExpireAt passes h decides whether it lives on. An
// error other than a *Disconnect keeps the connection and asks again
// later.
func (n *Node) OnServerSideRefresh(h RefreshHandler) { n.handlers.serverRefresh = h }

// OnSubRefresh sets the handler that prolongs subscriptions whose
// subscribe reply asked for ServerSideRefresh.
func (n *Node) OnSubRefresh(h SubRefreshHandler) { n.handlers.subRefresh = h }

// OnUnsubscribe sets the handler called when a subscription ends.
func (n *Node) OnUnsubscribe(h UnsubscribeHandler) { n.handlers.unsubscribe = h }

// OnDisconnect sets the handler called when a connection ends.
func (n *Node) OnDisconnect(h DisconnectHandler) { n.handlers.disconnect = h }

// Run starts the broker and the node's background work.
func (n *Node) Run() error {
	if err := n.broker.Run(&brokerEvents{n}); err != nil {
		return fmt.Errorf("gyre: run broker: %w", err)
	}
	if n.mapBroker != nil {
		if err := n.mapBroker.Run(&brokerEvents{n}); err != nil {
			return fmt.Errorf("gyre: run map broker: %w", err)
		}
	}
	if n.occupancy != nil {
		if n.occupancyHandler == nil {
			return errors.New("gyre: Config.Occupancy is set but no handler: call OnOccupancy before Run")
		}
		if err := n.cfg.Occupancy.RunOccupancy(n.occupancyHandler, n.cfg.OccupancyOptions); err != nil {
			return fmt.Errorf("gyre: run occupancy tracker: %w", err)
		}
	}
	if err := n.checkSharedPoll(); err != nil {
		return err
	}
	n.announce()
	n.wg.Go(func() { n.pinger.run(n.done) })
	n.wg.Go(func() { n.polls.runOutbox(n.done) })
	n.every(pollInterestRenew, n.polls.renewInterest)
	n.every(time.Second, n.polls.sweepExpired)
	n.every(NodeInfoInterval, n.announce)
	n.every(backlogRenew, n.backpressure.renew)
	n.every(n.cfg.PresenceUpdateInterval, n.refreshPresence)
	n.every(n.cfg.PositionCheckInterval, n.checkPositions)
	n.log.Info("node running", "id", n.id, "name", n.name)
	return nil
}

// Shutdown closes every connection with 3001 (so clients reconnect
// elsewhere), stops background work and closes the broker. It returns when
// done or when ctx ends.
func (n *Node) Shutdown(ctx context.Context) error {
	var err error
	n.shutdownOnce.Do(func() {
		n.closing.Store(true)
		// Before the broker goes: the others move what this node did
		// for them (shared-poll keys) at once.
		if err := n.sendControl(&controlpb.Command{Node: &controlpb.NodeInfo{Id: n.id, Leaving: true}}); err != nil {
			n.log.Warn("announce shutdown", "error", err)
		}
		close(n.done)
		n.polls.stop()
		n.live.Range(func(k, _ any) bool {
			k.(*Client).Disconnect(DisconnectShutdown)
			return true
		})
		finished := make(chan struct{})
		go func() {
			n.wg.Wait()
			// Wait for the close frames to be written, so that clients
			// see 3001 and not a dropped connection when the process exits.
			for n.liveClients.Load() > 0 && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			close(finished)
		}()
		select {
		case <-finished:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if n.occupancy != nil {
			// The releases of the connections just closed reach the
			// tracker before it goes.
			n.occupancy.close()
			err = errors.Join(err, n.cfg.Occupancy.Close())
		}
		err = errors.Join(err, n.broker.Close(), n.presence.Close())
		if n.mapBroker != nil {
			err = errors.Join(err, n.mapBroker.Close())
		}
	})
	return err
}

// every runs fn every interval until the node shuts down.
func (n *Node) every(interval time.Duration, fn func()) {
	n.wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-n.done:
				return
			case <-t.C:
				fn()
			}
		}
	})
}

// refreshPresence keeps presence entries of live subscriptions from
// expiring.
func (n *Node) refreshPresence() {
	n.hub.allClients(func(c *Client) { c.refreshPresence() })
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}
