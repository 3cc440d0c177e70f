package gyre

import (
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/protocol"
)

// broadcastPatternRun hands a run of publications of channel to the
// subscribers of every pattern of scope that matches it (of pattern
// alone, its name in the scope, when the broker names it), as broadcastRun
// does to a channel's: each pattern's pushes encoded once per wire
// variant, and a subscriber that takes all of them given the whole run in
// one queue operation. The push names the pattern, as the subscription
// does, and the publication names the channel.
func (n *Node) broadcastPatternRun(scope, pattern, channel string, run []broker.RunPublication, b *burst) {
	if len(run) == 0 {
		return
	}
	var pps []*protocol.Publication
	start := time.Now()
	tracer := n.cfg.DeliveryTracer
	traced := traces(tracer, run)
	subs := n.eachMatch(scope, pattern, channel, func(g *patternSubs, list *subList) {
		from := start
		if pps == nil {
			pps = make([]*protocol.Publication, len(run))
			for i, rp := range run {
				pps[i] = patternPub(channel, rp.Pub)
			}
		} else if traced {
			from = time.Now() // after the patterns fanned out before
		}
		encs := b.encs[:0]
		for i, rp := range run {
			encs = append(encs, patternPush(g.pattern, channel, pps[i], rp.Pub))
		}
		if traced {
			b.countFates(len(run))
		}
		n.fanOutRun(list, g.pattern, encs, b)
		if traced {
			b.fannedOut(tracer, run, channel, g.pattern, list.len(), from)
		}
		clear(encs)
		b.encs = encs[:0]
	})
	if subs > 0 {
		n.observeRun(len(run), subs, start)
	}
}

// eachMatch calls deliver with the subscribers of every pattern of scope
// held here that matches channel, or of pattern alone when it is set (a
// PatternFilterBroker's run), and returns how many subscribers it was
// given.
func (n *Node) eachMatch(scope, pattern, channel string, deliver func(g *patternSubs, list *subList)) (subs int) {
	ps := n.hub.patterns.scope(scope)
	if ps == nil {
		return 0
	}
	if pattern != "" {
		// The broker matched the channel already; the pattern may have
		// lost its last subscriber since.
		if g, ok := ps.index.Get(pattern); ok {
			if list := g.list.Load(); list.len() > 0 {
				deliver(g, list)
				subs = list.len()
			}
		}
		return subs
	}
	ps.index.Match(n.rules.Load().patternName(scope, channel), func(g *patternSubs) bool {
		if list := g.list.Load(); list.len() > 0 {
			deliver(g, list)
			subs += list.len()
		}
		return true
	})
	return subs
}

// patternPub is the publication of channel as pattern subscribers get
// it: naming the channel, and without an offset, since a pattern
// subscription follows many streams and an offset of one would read as a
// position in all of them.
func patternPub(channel string, pub *broker.Publication) *protocol.Publication {
	pp := toProtoPub(pub)
	pp.Offset = 0
	pp.Channel = channel
	return pp
}

// patternPush is the push of pp, a publication of channel, to the
// subscribers of pattern, to be encoded lazily.
func patternPush(pattern, channel string, pp *protocol.Publication, pub *broker.Publication) encodedPush {
	return encodedPush{
		push:     &protocol.Push{Channel: pattern, Pub: pp},
		data:     pub.Data,
		sizeHint: pushSizeHint(pattern, pub) + len(channel),
	}
}

// HandlePatternScopeLost is called by brokers that can lose their pattern
// scope subscriptions (a Redis connection dropped) once the scopes are
// subscribed again, in order with their publications: publications of
// their channels may have been missed in between. A pattern subscription
// has no stream to recover from, so every pattern subscriber of the
// scopes here is told it lost state (unsubscribe 2500, server-side ones
// disconnect 3010) and subscribes again; none is left with a silent gap.
func (e *brokerEvents) HandlePatternScopeLost(scopes []string) error {
	n := e.n
	told := 0
	for _, scope := range scopes {
		n.hub.patterns.eachSubscriber(scope, func(s *subscription) {
			if loseState(s) {
				told++
			}
		})
	}
	if len(scopes) > 0 {
		n.obs.SubscriptionsLost(told, 0)
		n.lossLog.addScopes(n, 0, len(scopes), told, 0)
	}
	return nil
}
