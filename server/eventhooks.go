package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/server/admin"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/hooks"
	"github.com/gyrehq/gyre/server/metrics"
)

// eventHooks sends the cluster's channel state events (to each namespace's
// state proxy) and user status events (to the user status proxy): one
// hooks.Queue per proxy, shared by the namespaces that name it. It is the
// node's occupancy handler: the tracker hands it the transitions this node
// is to deliver, and it returns once every queue has them delivered (or
// dropped, counted and logged), so that a tracker keeping them in Redis
// lets go of them only then.
type eventHooks struct {
	metrics   *metrics.Metrics
	namespace func(channel string) string
	// queues by proxy key; channels by namespace ("" is channels without
	// one); users is nil without user status events.
	queues   map[string]*hookQueue
	channels map[string]*hookQueue
	users    *hookQueue
}

// hookQueue is the queue of one proxy.
type hookQueue struct {
	name string
	q    *hooks.Queue
	// counts are the queue's totals since start, for the admin UI (the
	// metrics have them too, but a node may run without Prometheus).
	counts *hookCounts
}

type hookCounts struct{ delivered, failed, dropped atomic.Uint64 }

// eventHooks builds the queues of the state proxies of the namespaces
// that enable them and of the user status proxy; nil when there are none.
func (p *proxies) eventHooks() (*eventHooks, error) {
	c := p.cfg
	h := &eventHooks{
		metrics: p.s.metrics, namespace: p.namespace,
		queues: map[string]*hookQueue{}, channels: map[string]*hookQueue{},
	}
	each := func(ns string, o *config.ChannelOptions) error {
		if !o.StateProxyEnabled {
			return nil
		}
		q, err := p.hookQueue(o.StateProxyName, stateProxyKey, c.Channel.Proxy.State, h)
		if err != nil {
			return err
		}
		h.channels[ns] = q
		return nil
	}
	if err := each("", &c.Channel.WithoutNamespace); err != nil {
		return nil, err
	}
	for i := range c.Channel.Namespaces {
		if err := each(c.Channel.Namespaces[i].Name, &c.Channel.Namespaces[i].ChannelOptions); err != nil {
			return nil, err
		}
	}
	if us := c.Client.Proxy.UserStatus; us.Enabled || c.Client.UserStatusProxyName != "" {
		q, err := p.hookQueue(c.Client.UserStatusProxyName, userStatusProxyKey, us.Proxy, h)
		if err != nil {
			return nil, err
		}
		h.users = q
	}
	if len(h.queues) == 0 {
		return nil, nil
	}
	return h, nil
}

// hookQueueKey is the key of the queue (and of the occupancy route) of
// the proxy named name, key being the config key of the default one.
func hookQueueKey(name, key string) string {
	if name != "" && name != "default" {
		return name
	}
	return key
}

// Config keys of the default hook proxies, which name their queues.
const (
	stateProxyKey      = "channel.proxy.state"
	userStatusProxyKey = "client.proxy.user_status"
)

// hookRoutes returns the occupancy routes of c, one per proxy that
// events go to (its queue key), and the route of each key: each route is
// a tracker of its own (broker.RoutedOccupancy), so that one backend that
// is down holds back its own events only. Channels of a namespace without
// state events have no route; the node does not track them.
func hookRoutes(c *config.Config) (names []string, route func(kind broker.OccupancyKind, key string) string) {
	byNamespace := map[string]string{}
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	each := func(ns string, o *config.ChannelOptions) {
		if o.StateProxyEnabled {
			byNamespace[ns] = hookQueueKey(o.StateProxyName, stateProxyKey)
			add(byNamespace[ns])
		}
	}
	each("", &c.Channel.WithoutNamespace)
	for i := range c.Channel.Namespaces {
		each(c.Channel.Namespaces[i].Name, &c.Channel.Namespaces[i].ChannelOptions)
	}
	users := ""
	if c.Client.Proxy.UserStatus.Enabled || c.Client.UserStatusProxyName != "" {
		users = hookQueueKey(c.Client.UserStatusProxyName, userStatusProxyKey)
		add(users)
	}
	slices.Sort(names)
	return names, func(kind broker.OccupancyKind, key string) string {
		if kind == broker.OccupancyUser {
			return users
		}
		return byNamespace[channelNamespace(c, key)]
	}
}

// routedOccupancy returns the node's occupancy tracker for c's event
// hooks: a tracker per route, made by newRoute.
func routedOccupancy(c *config.Config, newRoute func(route string) (broker.OccupancyTracker, error)) (broker.OccupancyTracker, error) {
	names, route := hookRoutes(c)
	trackers := make(map[string]broker.OccupancyTracker, len(names))
	for _, name := range names {
		tr, err := newRoute(name)
		if err != nil {
			for _, made := range trackers {
				_ = made.Close()
			}
			return nil, fmt.Errorf("server: occupancy route %q: %w", name, err)
		}
		trackers[name] = tr
	}
	return broker.NewRoutedOccupancy(route, trackers), nil
}

// hookQueue returns the queue of the proxy a namespace (or the user
// status) names, made once per proxy.
func (p *proxies) hookQueue(name, key string, def config.Proxy, h *eventHooks) (*hookQueue, error) {
	cfg, qkey := def, hookQueueKey(name, key)
	if qkey != key {
		found := false
		for _, np := range p.cfg.Proxies {
			if np.Name == name {
				cfg, found = np.Proxy, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("server: proxy %q is not defined in proxies", name)
		}
	}
	if q := h.queues[qkey]; q != nil {
		return q, nil
	}
	// The proxy of the same key carries the gRPC connection and the TLS
	// of the endpoint, shared with the other proxies of that key.
	pr, err := p.build(qkey, proxyName(qkey, key), cfg)
	if err != nil {
		return nil, err
	}
	eh := p.cfg.EventHooks
	sc := hooks.SenderConfig{
		Endpoint: cfg.Endpoint, Timeout: cfg.Timeout, BinaryEncoding: cfg.BinaryEncoding,
		Secret: []byte(eh.HMACSecretKey), TLS: pr.TLS(),
	}
	if proxyProtocol(cfg.Endpoint) == "grpc" {
		sc.GRPCConn = pr.GRPCConn()
		sc.GRPCCompression = cfg.GRPC.Compression
	} else {
		sc.Headers = cfg.HTTP.StaticHeaders
	}
	sender, err := hooks.NewSender(sc)
	if err != nil {
		return nil, fmt.Errorf("server: %s: %w", key, err)
	}
	counts := &hookCounts{}
	q := &hookQueue{name: qkey, counts: counts, q: hooks.NewQueue(sender, hooks.QueueConfig{
		Name: qkey, MaxBatch: eh.BatchMaxSize, Linger: eh.BatchMaxDelay,
		MaxEvents: eh.QueueMaxSize, MaxAge: eh.MaxAge,
		Logger: p.s.log, Observer: hookObserver{p.s.metrics.EventHookQueue(qkey), counts},
	})}
	h.queues[qkey] = q
	return q, nil
}

// proxyName is the name of a proxy in metrics: its name in the proxies
// list, or "default" for the default proxy of key.
func proxyName(qkey, key string) string {
	if qkey == key {
		return "default"
	}
	return qkey
}

// HandleOccupancy hands each transition to its proxy's queue, in order,
// and waits until every queue has delivered (or dropped) them. Each
// occupancy route is one queue (hookRoutes), so a call holds the events
// of one queue, and the routes call it concurrently. A channel whose
// namespace no longer has a state proxy (a reload) has none.
func (h *eventHooks) HandleOccupancy(ctx context.Context, events []broker.OccupancyEvent) error {
	batches := map[*hookQueue][]hooks.Event{}
	var order []*hookQueue
	for _, e := range events {
		var q *hookQueue
		ev := hooks.Event{ID: e.ID, Key: e.Key, TimeMs: e.TimeMs}
		switch e.Kind {
		case broker.OccupancyChannel:
			q = h.channels[h.namespace(e.Key)]
			ev.Kind, ev.Type = hooks.KindChannel, hooks.TypeVacated
			if e.Occupied {
				ev.Type = hooks.TypeOccupied
			}
		case broker.OccupancyUser:
			q = h.users
			ev.Kind, ev.Type, ev.Info = hooks.KindUser, hooks.TypeOffline, e.Info
			if e.Occupied {
				ev.Type = hooks.TypeOnline
			}
		}
		if q == nil {
			continue
		}
		if _, ok := batches[q]; !ok {
			order = append(order, q)
		}
		batches[q] = append(batches[q], ev)
		h.metrics.EventHookTransitions(ev.Type, 1)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, q := range order {
		wg.Go(func() {
			if err := q.q.Deliver(ctx, batches[q]); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", q.name, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// snapshot is the state of every queue for the admin UI, by name; none
// on a node without event hooks (h nil).
func (h *eventHooks) snapshot() []admin.EventHookQueue {
	if h == nil {
		return nil
	}
	out := make([]admin.EventHookQueue, 0, len(h.queues))
	for _, q := range h.queues {
		s := admin.EventHookQueue{
			Name: q.name, Length: q.q.Len(), Recent: q.q.Recent(),
			Delivered: q.counts.delivered.Load(), Failed: q.counts.failed.Load(), Dropped: q.counts.dropped.Load(),
		}
		for ns, nq := range h.channels {
			if nq == q {
				s.Namespaces = append(s.Namespaces, ns)
			}
		}
		if len(s.Namespaces) > 0 {
			slices.Sort(s.Namespaces)
			s.Kinds = append(s.Kinds, hooks.KindChannel.String())
		}
		if h.users == q {
			s.Kinds = append(s.Kinds, hooks.KindUser.String())
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b admin.EventHookQueue) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// close stops the queues; what they hold is not delivered (the tracker
// hands it over again, to this node or another).
func (h *eventHooks) close() {
	for _, q := range h.queues {
		_ = q.q.Close()
	}
}

// hookObserver passes a queue's measurements to the metrics and counts
// them for the admin UI.
type hookObserver struct {
	m *metrics.EventHookQueue
	c *hookCounts
}

func (o hookObserver) Delivered(k hooks.Kind, n int, d time.Duration) {
	o.m.Delivered(k.String(), n, d)
	o.c.delivered.Add(uint64(n))
}
func (o hookObserver) Failed(k hooks.Kind, reason string) {
	o.m.Failed(k.String(), reason)
	o.c.failed.Add(1)
}
func (o hookObserver) Dropped(k hooks.Kind, reason string, n int) {
	o.m.Dropped(k.String(), reason, n)
	o.c.dropped.Add(uint64(n))
}
func (o hookObserver) QueueLength(n int) { o.m.QueueLength(n) }
