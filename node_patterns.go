package gyre

import (
	"errors"
	"fmt"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/protocol"
)

// checkPatternSupport refuses rules with wildcard subscriptions when the
// broker cannot deliver to them: a pattern subscriber would silently get
// nothing.
func (n *Node) checkPatternSupport(r *channelRules) error {
	if n.patterns != nil {
		return nil
	}
	if r.cfg.WithoutNamespace.AllowWildcardSubscriptions {
		return errors.New("gyre: allow_wildcard_subscriptions: the broker does not deliver to pattern subscriptions")
	}
	for _, ns := range r.cfg.Namespaces {
		if ns.AllowWildcardSubscriptions {
			return fmt.Errorf("gyre: namespace %q: allow_wildcard_subscriptions: the broker does not deliver to pattern subscriptions", ns.Name)
		}
	}
	return nil
}

// attachPattern adds a pattern subscription to the hub, subscribing the
// broker to its scope when it is the scope's first pattern here.
func (n *Node) attachPattern(s *subscription) error {
	return n.hub.patterns.add(s, s.scope, s.channel[len(s.channel)-int(s.nameLen):], n.patterns.SubscribePatternScope)
}

// detachPattern removes a pattern subscription from the hub, and the
// broker's scope subscription with the scope's last pattern.
func (n *Node) detachPattern(s *subscription) {
	n.hub.patterns.remove(s, s.scope, s.channel[len(s.channel)-int(s.nameLen):], func(scope string) {
		if err := n.patterns.UnsubscribePatternScope(scope); err != nil {
			n.log.Error("broker pattern scope unsubscribe", "scope", scope, "error", err)
		}
	})
}

// HandlePatternPublication delivers a publication to the pattern
// subscriptions here whose pattern matches its channel.
func (e *brokerEvents) HandlePatternPublication(scope, channel string, pub *broker.Publication) error {
	e.n.broadcastPattern(scope, channel, pub, nil)
	return nil
}

// HandlePatternPublication is brokerEvents' for the publications of a
// burst.
func (h *burstHandler) HandlePatternPublication(scope, channel string, pub *broker.Publication) error {
	h.b.n.broadcastPattern(scope, channel, pub, h.b)
	return nil
}

// broadcastPattern hands a publication of channel to the subscribers of
// every pattern of scope that matches it, each pattern's push encoded
// once per wire variant. The push names the pattern, as the subscription
// does, and the publication names the channel. It carries no offset: a
// pattern subscription follows many streams, and an offset of one would
// read as a position in all of them.
func (n *Node) broadcastPattern(scope, channel string, pub *broker.Publication, b *Burst) {
	ps := n.hub.patterns.scope(scope)
	if ps == nil {
		return
	}
	name := n.rules.Load().patternName(scope, channel)
	var pp *protocol.Publication
	start := time.Now()
	sent, subs := 0, 0
	ps.index.Match(name, func(g *patternSubs) bool {
		list := g.list.Load()
		if list.len() == 0 {
			return true
		}
		if pp == nil {
			pp = toProtoPub(pub)
			pp.Offset = 0
			pp.Channel = channel
		}
		enc := encodedPush{
			push:     &protocol.Push{Channel: g.pattern, Pub: pp},
			data:     pub.Data,
			sizeHint: pushSizeHint(g.pattern, pub) + len(channel),
		}
		for _, chunk := range list.chunks {
			for _, s := range chunk {
				if n.deliverOne(s, g.pattern, &enc, b) {
					sent++
				}
			}
		}
		subs += list.len()
		return true
	})
	if subs > 0 {
		n.obs.MessagesSent("publication", sent)
		n.obs.Broadcast(subs, time.Since(start))
	}
}
