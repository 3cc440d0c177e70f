package gyre

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gyrehq/gyre/internal/controlpb"
)

// ClusterChannelsTimeout bounds how long ClusterChannels waits for the
// other nodes when its context has no deadline.
const ClusterChannelsTimeout = 3 * time.Second

// channelSurveys holds the ClusterChannels calls waiting for replies.
type channelSurveys struct {
	mu      sync.Mutex
	pending map[string]chan channelsReply
}

// channelsReply is a node's reply and the node.
type channelsReply struct {
	from string
	rep  *controlpb.ChannelsReply
}

func (s *channelSurveys) add(id string, ch chan channelsReply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = make(map[string]chan channelsReply)
	}
	s.pending[id] = ch
}

func (s *channelSurveys) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, id)
}

// deliver hands a reply to its call, if it still waits; never blocks
// (the call's channel has room for every node it asked).
func (s *channelSurveys) deliver(from string, r *controlpb.ChannelsReply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.pending[r.Id]; ok {
		select {
		case ch <- channelsReply{from, r}:
		default:
		}
	}
}

// ClusterChannels lists the channels with subscribers on any node of the
// cluster whose names match pattern (path.Match syntax; "" matches all),
// with their numbers of subscribers summed over the nodes. It asks the
// nodes that announced themselves through the broker and waits for their
// answers until ctx ends (ClusterChannelsTimeout without a deadline); a
// node that does not answer in time is left out, with a warning in the
// log. Nodes of versions that cannot answer are not asked.
func (n *Node) ClusterChannels(ctx context.Context, pattern string) (map[string]ChannelInfo, error) {
	out, err := n.Channels(pattern)
	if err != nil {
		return nil, err
	}
	peers := n.nodes.answering(n.id)
	if len(peers) == 0 {
		return out, nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ClusterChannelsTimeout)
		defer cancel()
	}
	id := newID()
	replies := make(chan channelsReply, len(peers))
	n.surveys.add(id, replies)
	defer n.surveys.remove(id)
	if err := n.sendControl(&controlpb.Command{ChannelsRequest: &controlpb.ChannelsRequest{Id: id, Pattern: pattern}}); err != nil {
		return nil, fmt.Errorf("gyre: ask the nodes for their channels: %w", err)
	}
	waiting := make(map[string]bool, len(peers))
	for _, p := range peers {
		waiting[p] = true
	}
	for len(waiting) > 0 {
		select {
		case r := <-replies:
			if !waiting[r.from] {
				continue
			}
			delete(waiting, r.from)
			if r.rep.Error != "" {
				n.log.Warn("cluster channels: a node could not list its channels", "node", r.from, "error", r.rep.Error)
				continue
			}
			for ch, num := range r.rep.Channels {
				ci := out[ch]
				ci.NumClients += int(num)
				out[ch] = ci
			}
		case <-ctx.Done():
			missing := make([]string, 0, len(waiting))
			for id := range waiting {
				missing = append(missing, id)
			}
			n.log.Warn("cluster channels: nodes did not answer in time; their channels are left out", "nodes", missing, "error", ctx.Err())
			return out, nil
		}
	}
	return out, nil
}

// answerChannels answers another node's ChannelsRequest.
func (n *Node) answerChannels(from string, req *controlpb.ChannelsRequest) {
	rep := &controlpb.ChannelsReply{Id: req.Id}
	m, err := n.Channels(req.Pattern)
	if err != nil {
		rep.Error = err.Error()
	} else {
		rep.Channels = make(map[string]uint32, len(m))
		for ch, ci := range m {
			rep.Channels[ch] = uint32(ci.NumClients)
		}
	}
	if err := n.sendControl(&controlpb.Command{To: from, ChannelsReply: rep}); err != nil {
		n.log.Warn("cluster channels: answer", "node", from, "error", err)
	}
}
