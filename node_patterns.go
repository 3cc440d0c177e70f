package gyre

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/gyrehq/gyre/broker"
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
// broker to its scope when it is the scope's first pattern here (and to
// the pattern when the broker filters by pattern and it is its first
// subscriber).
func (n *Node) attachPattern(s *subscription) error {
	return n.hub.patterns.add(s, s.scope, s.channel[len(s.channel)-int(s.nameLen):], n.patternHooks())
}

// detachPattern removes a pattern subscription from the hub, and the
// broker's pattern and scope subscriptions with their last subscriber.
func (n *Node) detachPattern(s *subscription) {
	n.hub.patterns.remove(s, s.scope, s.channel[len(s.channel)-int(s.nameLen):], n.patternHooks())
}

// patternHooks are the broker calls for patternHub.
func (n *Node) patternHooks() patternHooks {
	h := patternHooks{
		scope: n.patterns.SubscribePatternScope,
		unscope: func(scope string) {
			if err := n.patterns.UnsubscribePatternScope(scope); err != nil {
				n.logBrokerFailure("unsubscribe", slog.LevelError, "broker pattern scope unsubscribe", "scope", scope, "error", err)
			}
		},
	}
	if f, ok := n.patterns.(broker.PatternFilterBroker); ok {
		h.pattern = f.SubscribePattern
		h.unpattern = func(scope, name string) {
			if err := f.UnsubscribePattern(scope, name); err != nil {
				n.logBrokerFailure("unsubscribe", slog.LevelError, "broker pattern unsubscribe", "scope", scope, "pattern", name, "error", err)
			}
		}
	}
	return h
}
