package gyre

import (
	"errors"
	"fmt"
	"log/slog"
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
			n.logBrokerFailure("unsubscribe", slog.LevelError, "broker pattern scope unsubscribe", "scope", scope, "error", err)
		}
	})
}
