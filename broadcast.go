package gyre

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/protocol"
)

// brokerEvents receives what the broker delivers and fans it out to the
// local subscribers.
type brokerEvents struct{ n *Node }

var (
	_ broker.EventHandler            = (*brokerEvents)(nil)
	_ broker.SubscriptionLostHandler = (*brokerEvents)(nil)
)

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
	// data is the payload that JSON variants embed raw; it must be JSON.
	data []byte
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
	if t == protocol.TypeJSON && len(e.data) > 0 && !json.Valid(e.data) {
		e.err = errNotJSON
		return nil
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
	enc := encodedPush{push: &protocol.Push{Channel: channel, Pub: toProtoPub(pub)}, data: pub.Data}
	sent := 0
	defer func() {
		n.obs.MessagesSent("publication", sent)
		n.obs.Broadcast(len(subs), time.Since(start))
	}()
	for _, s := range subs {
		if !s.filter.Match(pub.Tags) {
			s.skip(pub.Offset)
			continue
		}
		sent++
		msg := enc.get(s.client.proto, s.client.uni)
		if msg == nil {
			n.undeliverable(s.client, channel, enc.err)
			continue
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
			n.undeliverable(s.client, channel, enc.err)
			continue
		}
		s.deliver(msg, 0)
	}
}

// errNotJSON: a payload that is not JSON cannot be embedded for a JSON
// client (binary data published by a protobuf client or with b64data).
var errNotJSON = errors.New("gyre: payload is not JSON")

// undeliverable handles a message that cannot be encoded for a client:
// binary data for a JSON client closes it with 3506, as the protocol
// says, since skipping the message would leave a silent gap.
func (n *Node) undeliverable(c *Client, channel string, err error) {
	if errors.Is(err, errNotJSON) {
		n.log.Info("binary payload for a JSON client", "client", c.id, "channel", channel)
		go c.Disconnect(DisconnectBadProtocol)
		return
	}
	n.log.Error("encode push", "client", c.id, "channel", channel, "error", err)
	go c.Disconnect(DisconnectServerError)
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

// HandleSubscriptionLost is called by brokers that can lose their
// subscriptions (Redis restarting) once the channels are subscribed again:
// publications may have been missed in between. Subscribers that were
// promised continuity (recoverable or positioned) are unsubscribed with
// 2500, so they resubscribe and recover from history; never a silent gap.
func (e *brokerEvents) HandleSubscriptionLost(channels []string) error {
	n := e.n
	for _, ch := range channels {
		for _, s := range n.hub.subscribers(ch) {
			switch {
			case s.serverSide && (s.recoverable || s.positioned):
				// The client cannot resubscribe a server-side
				// subscription: it reconnects and recovers at connect.
				go s.client.Disconnect(DisconnectInsufficientState)
			case s.recoverable || s.positioned:
				go s.client.Unsubscribe(ch, UnsubscribeCodeInsufficientState, "insufficient state")
			}
		}
	}
	if len(channels) > 0 {
		n.log.Warn("broker subscriptions were interrupted; recoverable subscribers resubscribe", "channels", len(channels))
	}
	return nil
}
