package gyre

import (
	"sync"
	"time"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/websocket"
)

// pinger sends pings to every connection and closes bidirectional ones
// that do not answer (unidirectional clients cannot), with one ticker for
// the whole node instead of a timer per connection. An empty Reply and an
// empty Push encode alike ("{}", or a zero-length message), so one ping
// message serves both kinds. Connections are spread over one slot per
// second of the ping interval; each tick pings one slot and checks the
// pongs of the slot pinged PongTimeout ago.
type pinger struct {
	n           *Node
	interval    int // seconds
	pongTimeout int // seconds
	slots       []pingSlot
	mu          sync.Mutex
	next        int // slot for the next connection
	current     int
}

type pingSlot struct {
	mu      sync.Mutex
	clients map[*Client]struct{}
}

var pingMsgs = [2][]byte{
	protocol.TypeJSON:     mustReply(protocol.TypeJSON),
	protocol.TypeProtobuf: mustReply(protocol.TypeProtobuf),
}

// pingFrames are pingMsgs as the frames a connection with
// permessage-deflate queues; too short to compress.
var pingFrames = [2][]byte{
	protocol.TypeJSON:     (&websocket.Compression{}).AppendFrame(nil, false, pingMsgs[protocol.TypeJSON]),
	protocol.TypeProtobuf: (&websocket.Compression{}).AppendFrame(nil, true, pingMsgs[protocol.TypeProtobuf]),
}

func mustReply(t protocol.Type) []byte {
	b, err := protocol.AppendReply(nil, t, &protocol.Reply{})
	if err != nil {
		panic(err)
	}
	return b
}

func newPinger(n *Node, interval, pongTimeout time.Duration) *pinger {
	p := &pinger{
		n:           n,
		interval:    int(interval / time.Second),
		pongTimeout: int((pongTimeout + time.Second - 1) / time.Second),
	}
	p.slots = make([]pingSlot, max(p.interval, 0))
	for i := range p.slots {
		p.slots[i].clients = make(map[*Client]struct{})
	}
	return p
}

// add puts a connection in the slot pinged furthest from now, so its first
// ping comes about one interval after connect.
func (p *pinger) add(c *Client) {
	if p.interval <= 0 {
		return
	}
	p.mu.Lock()
	i := p.current
	p.mu.Unlock()
	s := &p.slots[i]
	s.mu.Lock()
	s.clients[c] = struct{}{}
	// The slot is kept in the client, not in a map of the pinger: one
	// map entry per connection less.
	c.pingSlot.Store(int32(i) + 1)
	s.mu.Unlock()
}

func (p *pinger) remove(c *Client) {
	i := c.pingSlot.Swap(0) - 1
	if i < 0 {
		return
	}
	s := &p.slots[i]
	s.mu.Lock()
	delete(s.clients, c)
	s.mu.Unlock()
}

func (p *pinger) run(done <-chan struct{}) {
	if p.interval <= 0 {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var batch []*Client
	var sent deliveries
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		p.mu.Lock()
		p.current = (p.current + 1) % p.interval
		cur := p.current
		p.mu.Unlock()

		// Pongs are due from the slot pinged pongTimeout seconds ago.
		if p.pongTimeout > 0 {
			check := (cur - p.pongTimeout + p.interval*2) % p.interval
			batch = p.collect(check, batch[:0])
			for _, c := range batch {
				if c.awaitingPong.Load() {
					c.Disconnect(DisconnectNoPong)
				}
			}
		}
		batch = p.collect(cur, batch[:0])
		for _, c := range batch {
			c.awaitingPong.Store(p.pongTimeout > 0 && !c.uni)
			ping := pingMsgs[c.proto]
			if c.deflate != nil {
				ping = pingFrames[c.proto]
			}
			c.enqueueIn(ping, nil)
			sent.add(c.tslot, 1, len(ping))
		}
		sent.report(p.n, "server_ping")
		clear(batch)
	}
}

func (p *pinger) collect(slot int, dst []*Client) []*Client {
	s := &p.slots[slot]
	s.mu.Lock()
	for c := range s.clients {
		dst = append(dst, c)
	}
	s.mu.Unlock()
	return dst
}
