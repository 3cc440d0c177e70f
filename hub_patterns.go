package gyre

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/gyrehq/gyre/match"
)

// patternHub knows the local pattern subscriptions: per pattern scope (a
// namespace that allows wildcard subscriptions) an index from pattern to
// its subscribers. A publication of such a namespace looks up its scope
// and matches its name against the index; publications of other
// namespaces never come here.
type patternHub struct {
	// mu serializes changes, and with them the broker's scope
	// subscriptions: a last pattern leaving a scope and a first one
	// arriving cannot reach the broker in the opposite order.
	mu sync.Mutex
	// scopes is a copy-on-write map, replaced when a scope gets its first
	// pattern or loses its last, so that readers take no lock.
	scopes atomic.Pointer[map[string]*patternScope]
}

// patternScope is the pattern subscriptions of one scope.
type patternScope struct {
	index *match.Index[*patternSubs]
	// byName holds the index's patterns too, for the writers, which look
	// up and list them. Writers change it holding patternHub.mu and mu;
	// mu alone lets the broker's goroutine list it (eachSubscriber)
	// without waiting for patternHub.mu, which is held across broker
	// round trips.
	mu     sync.Mutex
	byName map[string]*patternSubs
}

// patternSubs is one pattern's subscribers, like channelSubs is one
// channel's.
type patternSubs struct {
	// pattern is the whole name the clients subscribed with ("news:*.eu"),
	// which their pushes carry as the channel.
	pattern string
	list    atomic.Pointer[subList]
}

// scope returns the scope's patterns, nil when there are none here.
func (h *patternHub) scope(scope string) *patternScope {
	m := h.scopes.Load()
	if m == nil {
		return nil
	}
	return (*m)[scope]
}

// patternHooks are the broker calls the hub makes, under its lock, as
// scopes and patterns come and go here: scope when a scope gets its first
// pattern, pattern (nil unless the broker subscribes patterns one by
// one) when a pattern gets its first subscriber; unscope and unpattern
// when they lose their last.
type patternHooks struct {
	scope     func(scope string) error
	unscope   func(scope string)
	pattern   func(scope, name string) error
	unpattern func(scope, name string)
}

// add adds s, a subscription to a pattern of scope whose part after the
// scope is name, calling the broker's hooks for a new scope or pattern;
// their error leaves nothing added.
func (h *patternHub) add(s *subscription, scope, name string, hooks patternHooks) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	ps := h.scope(scope)
	newScope := ps == nil
	if newScope {
		if err := hooks.scope(scope); err != nil {
			return err
		}
		ps = &patternScope{index: match.NewIndex[*patternSubs](), byName: make(map[string]*patternSubs)}
	}
	g := ps.byName[name]
	if g == nil {
		if hooks.pattern != nil {
			if err := hooks.pattern(scope, name); err != nil {
				if newScope {
					hooks.unscope(scope)
				}
				return err
			}
		}
		g = &patternSubs{pattern: s.channel}
		g.list.Store(emptySubs)
		if err := ps.index.Set(name, g); err != nil {
			// The name was checked when the subscription was authorized.
			return err
		}
		ps.mu.Lock()
		ps.byName[name] = g
		ps.mu.Unlock()
	}
	if newScope {
		h.replaceScope(scope, ps)
	}
	g.list.Store(g.list.Load().withSub(s))
	return nil
}

// remove removes s, calling the broker's hooks when its pattern, and its
// scope, lose their last subscriber here.
func (h *patternHub) remove(s *subscription, scope, name string, hooks patternHooks) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ps := h.scope(scope)
	if ps == nil {
		return
	}
	g := ps.byName[name]
	if g == nil {
		return
	}
	next, ok := g.list.Load().withoutSub(s)
	if !ok {
		return
	}
	g.list.Store(next)
	if next.n > 0 {
		return
	}
	ps.index.Delete(name)
	ps.mu.Lock()
	delete(ps.byName, name)
	ps.mu.Unlock()
	if hooks.unpattern != nil {
		hooks.unpattern(scope, name)
	}
	if len(ps.byName) == 0 {
		h.replaceScope(scope, nil)
		hooks.unscope(scope)
	}
}

// replaceScope publishes a new scopes map with scope set to ps, or
// without scope when ps is nil. h.mu must be held.
func (h *patternHub) replaceScope(scope string, ps *patternScope) {
	var m map[string]*patternScope
	if old := h.scopes.Load(); old != nil {
		m = maps.Clone(*old)
	} else {
		m = make(map[string]*patternScope, 1)
	}
	if ps == nil {
		delete(m, scope)
	} else {
		m[scope] = ps
	}
	h.scopes.Store(&m)
}

// each calls fn for every pattern held here with its subscriber count.
func (h *patternHub) each(fn func(pattern string, numSubs int)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.scopes.Load()
	if m == nil {
		return
	}
	for _, ps := range *m {
		for _, g := range ps.byName {
			fn(g.pattern, g.list.Load().len())
		}
	}
}

// eachSubscriber calls fn for every subscription to a pattern of scope
// held here (none when the scope has none).
func (h *patternHub) eachSubscriber(scope string, fn func(s *subscription)) {
	ps := h.scope(scope)
	if ps == nil {
		return
	}
	ps.mu.Lock()
	groups := make([]*patternSubs, 0, len(ps.byName))
	for _, g := range ps.byName {
		groups = append(groups, g)
	}
	ps.mu.Unlock()
	for _, g := range groups {
		for s := range g.list.Load().all() {
			fn(s)
		}
	}
}
