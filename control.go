package gyre

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gyrehq/gyre/internal/controlpb"
)

// Commands about users (subscribe, unsubscribe, disconnect, refresh) go to
// every node through the broker, because the user's connections may be on
// any of them; each node applies them to its own connections. Nodes also
// announce themselves periodically so that Info lists the whole cluster.

// NodeInfoInterval is how often a node announces itself (and measures
// its publish rate, NodeInfo.PublishRate); a node not heard of for three
// intervals is dropped from Info.
const NodeInfoInterval = 5 * time.Second

// nodeRegistry holds what the other nodes announced.
type nodeRegistry struct {
	mu    sync.Mutex
	nodes map[string]seenNode
}

type seenNode struct {
	info NodeInfo
	at   time.Time
	// answersChannels: the node answers ChannelsRequest.
	answersChannels bool
}

// update records a node's announcement and reports whether the node is
// new (or had been dropped).
func (r *nodeRegistry) update(info NodeInfo, answersChannels bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nodes == nil {
		r.nodes = make(map[string]seenNode)
	}
	old, known := r.nodes[info.ID]
	r.nodes[info.ID] = seenNode{info: info, at: time.Now(), answersChannels: answersChannels}
	return !known || time.Since(old.at) > 3*NodeInfoInterval
}

// forget drops a node that said it leaves.
func (r *nodeRegistry) forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.nodes, id)
}

// answering returns the ids of the other nodes heard of recently that
// answer ChannelsRequest.
func (r *nodeRegistry) answering(self string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for id, s := range r.nodes {
		if id != self && s.answersChannels && time.Since(s.at) <= 3*NodeInfoInterval {
			out = append(out, id)
		}
	}
	return out
}

// live returns the nodes heard of recently, dropping the others.
func (r *nodeRegistry) live(self string) []NodeInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []NodeInfo
	for id, s := range r.nodes {
		if time.Since(s.at) > 3*NodeInfoInterval {
			delete(r.nodes, id)
			continue
		}
		if id != self {
			out = append(out, s.info)
		}
	}
	return out
}

// sendControl publishes a control command to every node (or to cmd.To).
func (n *Node) sendControl(cmd *controlpb.Command) error {
	cmd.From = n.id
	data, err := cmd.MarshalVT()
	if err != nil {
		return fmt.Errorf("gyre: encode control command: %w", err)
	}
	if err := n.broker.PublishControl(data, cmd.To); err != nil {
		n.obs.BrokerFailed("publish")
		return fmt.Errorf("gyre: publish control command: %w", err)
	}
	n.obs.BrokerSent("control", 1)
	return nil
}

// handleControl applies a control command from any node, this one
// included.
func (n *Node) handleControl(data []byte) error {
	n.obs.BrokerReceived("control", 1)
	var cmd controlpb.Command
	if err := cmd.UnmarshalVT(data); err != nil {
		n.log.Warn("malformed control message", "size", len(data), "error", err)
		return fmt.Errorf("gyre: decode control command: %w", err)
	}
	if cmd.To != "" && cmd.To != n.id {
		return nil
	}
	switch {
	case cmd.Node != nil && cmd.Node.Leaving:
		if cmd.From != n.id {
			n.nodes.forget(cmd.Node.Id)
			n.backpressure.setRemote(cmd.Node.Id, false)
			// Not on the broker's goroutine: interest goes out as
			// publishes.
			n.polls.start(n.polls.renewInterest)
		}
	case cmd.Node != nil:
		ni := cmd.Node
		joined := n.nodes.update(NodeInfo{
			ID: ni.Id, Name: ni.Name, Version: ni.Version,
			NumClients: int(ni.NumClients), NumUsers: int(ni.NumUsers),
			NumChannels: int(ni.NumChannels), NumSubs: int(ni.NumSubs),
			Uptime:      time.Duration(ni.UptimeSeconds) * time.Second,
			PublishRate: ni.PublishRate, MemoryBytes: ni.MemoryBytes,
			BrokerHealthy: ni.BrokerHealthy, BrokerError: ni.BrokerError,
		}, ni.AnswersChannels)
		if joined && cmd.From != n.id && !n.closing.Load() {
			// The newcomer learns of this node now rather than at its
			// next announcement, and takes its share of shared-poll keys.
			n.polls.start(n.announce)
			n.polls.start(n.polls.renewInterest)
		}
	case cmd.Subscribe != nil:
		s := cmd.Subscribe
		n.subscribeLocal(s.User, s.Channel, ClientFilter{ClientID: s.Client, Session: s.Session}, serverSubscribeFromControl(s))
	case cmd.Unsubscribe != nil:
		u := cmd.Unsubscribe
		n.unsubscribeLocal(u.User, u.Channel, ClientFilter{ClientID: u.Client, Session: u.Session})
	case cmd.Disconnect != nil:
		d := cmd.Disconnect
		n.disconnectLocal(d.User, &Disconnect{Code: d.Code, Reason: d.Reason}, ClientFilter{ClientID: d.Client, Session: d.Session}, d.Whitelist)
	case cmd.Refresh != nil:
		r := cmd.Refresh
		n.refreshLocal(r.User, ClientFilter{ClientID: r.Client, Session: r.Session}, r.Expired, r.ExpireAt, r.Info)
	case cmd.Emulation != nil:
		n.handleEmulation(cmd.Emulation)
	case cmd.ChannelsRequest != nil:
		if cmd.From != n.id {
			// Not on the broker's goroutine: the answer is a publish.
			go n.answerChannels(cmd.From, cmd.ChannelsRequest)
		}
	case cmd.ChannelsReply != nil:
		n.surveys.deliver(cmd.From, cmd.ChannelsReply)
	case cmd.MapClear != nil:
		n.mapClearedLocal(cmd.MapClear.Channel)
	case cmd.Backlog != nil:
		n.backpressure.setRemote(cmd.From, cmd.Backlog.Behind)
	case cmd.PollInterest != nil, cmd.PollUpdate != nil:
		n.polls.handle(cmd.From, &cmd)
	}
	return nil
}

// announce tells the other nodes about this one.
func (n *Node) announce() {
	if n.closing.Load() {
		// After the leaving announcement, another would have the
		// others count this node in again.
		return
	}
	n.load.measure(n.published.Load())
	i := n.LocalInfo()
	err := n.sendControl(&controlpb.Command{Node: &controlpb.NodeInfo{
		Id: i.ID, Name: i.Name, Version: i.Version,
		NumClients: uint32(i.NumClients), NumUsers: uint32(i.NumUsers),
		NumChannels: uint32(i.NumChannels), NumSubs: uint32(i.NumSubs),
		UptimeSeconds: int64(i.Uptime / time.Second),
		PublishRate:   i.PublishRate, MemoryBytes: i.MemoryBytes,
		BrokerHealthy: i.BrokerHealthy, BrokerError: i.BrokerError,
		AnswersChannels: true,
	}})
	if err != nil {
		n.log.Warn("announce node", "error", err)
	}
}

// Info describes the nodes of the cluster: this one, and those that
// announced themselves recently through the broker.
func (n *Node) Info() []NodeInfo {
	out := append([]NodeInfo{n.LocalInfo()}, n.nodes.live(n.id)...)
	sort.Slice(out[1:], func(i, j int) bool { return out[1+i].Name < out[1+j].Name })
	return out
}
