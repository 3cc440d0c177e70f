package gyre

import (
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/protocol"
)

// brokerEvents receives what the broker delivers and fans it out to the
// local subscribers.
type brokerEvents struct{ n *Node }

func (e *brokerEvents) HandlePublication(channel string, pub *broker.Publication, sp broker.StreamPosition, delta bool, prev *broker.Publication) error {
	e.n.broadcastPublication(channel, pub)
	return nil
}

func (e *brokerEvents) HandleJoin(channel string, info *broker.ClientInfo) error {
	e.n.broadcastJoinLeave(channel, &protocol.Push{Channel: channel, Join: &protocol.Join{Info: toProtoInfo(info)}})
	return nil
}

func (e *brokerEvents) HandleLeave(channel string, info *broker.ClientInfo) error {
	e.n.broadcastJoinLeave(channel, &protocol.Push{Channel: channel, Leave: &protocol.Leave{Info: toProtoInfo(info)}})
	return nil
}

func (e *brokerEvents) HandleControl(data []byte) error {
	return e.n.handleControl(data)
}

// encodedPush encodes one push lazily, once per wire variant, for a whole
// fan-out.
type encodedPush struct {
	push *protocol.Push
	// variants: [protocol type][unidirectional]
	msgs [2][2][]byte
	err  error
}

func (e *encodedPush) get(t protocol.Type, uni bool) []byte {
	u := 0
	if uni {
		u = 1
	}
	if m := e.msgs[t][u]; m != nil {
		return m
	}
	var m []byte
	if uni {
		m, e.err = protocol.AppendPush(nil, t, e.push)
	} else {
		m, e.err = protocol.AppendReply(nil, t, &protocol.Reply{Push: e.push})
	}
	e.msgs[t][u] = m
	return m
}

// broadcastPublication hands one publication to every local subscriber,
// encoding it at most once per wire variant and not at all when the channel
// has no subscribers here.
func (n *Node) broadcastPublication(channel string, pub *broker.Publication) {
	subs := n.hub.subscribers(channel)
	if len(subs) == 0 {
		return
	}
	start := time.Now()
	enc := encodedPush{push: &protocol.Push{Channel: channel, Pub: toProtoPub(pub)}}
	defer func() {
		n.obs.MessagesSent("publication", len(subs))
		n.obs.Broadcast(len(subs), time.Since(start))
	}()
	for _, s := range subs {
		msg := enc.get(s.client.proto, s.client.uni)
		if msg == nil {
			n.log.Error("encode publication", "channel", channel, "error", enc.err)
			return
		}
		s.deliver(msg, pub.Offset)
	}
}

func (n *Node) broadcastJoinLeave(channel string, push *protocol.Push) {
	subs := n.hub.subscribers(channel)
	if len(subs) == 0 {
		return
	}
	enc := encodedPush{push: push}
	kind := "join"
	if push.Leave != nil {
		kind = "leave"
	}
	sent := 0
	defer func() { n.obs.MessagesSent(kind, sent) }()
	for _, s := range subs {
		if !s.pushJoinLeave {
			continue
		}
		sent++
		msg := enc.get(s.client.proto, s.client.uni)
		if msg == nil {
			n.log.Error("encode join/leave", "channel", channel, "error", enc.err)
			return
		}
		s.deliver(msg, 0)
	}
}

func toProtoInfo(info *broker.ClientInfo) *protocol.ClientInfo {
	if info == nil {
		return nil
	}
	return &protocol.ClientInfo{User: info.UserID, Client: info.ClientID, ConnInfo: info.ConnInfo, ChanInfo: info.ChanInfo}
}

func toProtoPub(p *broker.Publication) *protocol.Publication {
	return &protocol.Publication{
		Data:    p.Data,
		Info:    toProtoInfo(p.Info),
		Offset:  p.Offset,
		Tags:    p.Tags,
		Time:    p.Time,
		Channel: p.Channel,
	}
}
