package gyre

import (
	"fmt"
	"sync"
	"time"

	"github.com/gyrehq/gyre/protocol"
)

// RateLimitConfig limits the commands clients send, with token buckets kept
// in memory on each node: one set per connection (Client) and one per user
// (User, shared by that user's connections on this node; anonymous
// connections have none). A command over a limit is answered with error
// 111 (too many requests), or the connection is closed with 3013 when
// Disconnect is set. Commands are only counted, never delayed.
type RateLimitConfig struct {
	Client CommandRates
	User   CommandRates
	// Disconnect closes a connection over a limit with 3013 instead of
	// answering the command with error 111.
	Disconnect bool
	// Now is the clock of the buckets; nil means the monotonic clock.
	// Tests pass a fake one.
	Now func() time.Duration
}

// CommandRates holds the buckets of each limited command. A command must
// find a token in every bucket of its kind (or of Default when its kind has
// none) and in every bucket of Total.
type CommandRates struct {
	// Total counts every command that carries an id, whatever its kind.
	Total []RateBucket
	// Default applies to a limited kind with no buckets of its own.
	Default       []RateBucket
	Subscribe     []RateBucket
	Publish       []RateBucket
	History       []RateBucket
	Presence      []RateBucket
	PresenceStats []RateBucket
	RPC           []RateBucket
	Refresh       []RateBucket
	SubRefresh    []RateBucket
}

// RateBucket allows Rate commands per Interval: it holds up to Rate tokens
// and refills continuously at Rate per Interval.
type RateBucket struct {
	Interval time.Duration
	Rate     int
}

func (r CommandRates) enabled() bool {
	return len(r.Total)+len(r.Default)+len(r.Subscribe)+len(r.Publish)+len(r.History)+
		len(r.Presence)+len(r.PresenceStats)+len(r.RPC)+len(r.Refresh)+len(r.SubRefresh) > 0
}

func (r CommandRates) validate(name string) error {
	for _, b := range [][]RateBucket{r.Total, r.Default, r.Subscribe, r.Publish, r.History, r.Presence, r.PresenceStats, r.RPC, r.Refresh, r.SubRefresh} {
		for _, x := range b {
			if x.Interval <= 0 || x.Rate <= 0 {
				return fmt.Errorf("gyre: RateLimit.%s: bucket %d per %v: interval and rate must be positive", name, x.Rate, x.Interval)
			}
		}
	}
	return nil
}

// commandKind is the index of a limited command's buckets.
type commandKind uint8

const (
	kindUnlimited commandKind = iota // counted by Total only
	kindSubscribe
	kindPublish
	kindHistory
	kindPresence
	kindPresenceStats
	kindRPC
	kindRefresh
	kindSubRefresh
	numCommandKinds
)

func kindOf(cmd *protocol.Command) commandKind {
	switch {
	case cmd.Subscribe != nil:
		return kindSubscribe
	case cmd.Publish != nil:
		return kindPublish
	case cmd.History != nil:
		return kindHistory
	case cmd.Presence != nil:
		return kindPresence
	case cmd.PresenceStats != nil:
		return kindPresenceStats
	case cmd.Rpc != nil:
		return kindRPC
	case cmd.Refresh != nil:
		return kindRefresh
	case cmd.SubRefresh != nil:
		return kindSubRefresh
	}
	return kindUnlimited
}

// rateSpec is CommandRates resolved per kind, Default filled in.
type rateSpec struct {
	total []RateBucket
	kinds [numCommandKinds][]RateBucket
}

func newRateSpec(r CommandRates) *rateSpec {
	if !r.enabled() {
		return nil
	}
	s := &rateSpec{total: r.Total}
	for k, b := range [numCommandKinds][]RateBucket{
		kindSubscribe: r.Subscribe, kindPublish: r.Publish, kindHistory: r.History,
		kindPresence: r.Presence, kindPresenceStats: r.PresenceStats, kindRPC: r.RPC,
		kindRefresh: r.Refresh, kindSubRefresh: r.SubRefresh,
	} {
		if k == int(kindUnlimited) {
			continue
		}
		if len(b) == 0 {
			b = r.Default
		}
		s.kinds[k] = b
	}
	return s
}

// bucket is one token bucket's state.
type bucket struct {
	tokens float64
	last   time.Duration
}

// commandLimiter holds the buckets of one connection or one user. Its
// state is allocated once, when it is made; a check allocates nothing.
type commandLimiter struct {
	spec  *rateSpec
	mu    sync.Mutex
	total []bucket
	kinds [numCommandKinds][]bucket
	// refs counts the connections sharing a user's limiter.
	refs int
}

func newCommandLimiter(s *rateSpec, now time.Duration) *commandLimiter {
	l := &commandLimiter{spec: s}
	fill := func(specs []RateBucket) []bucket {
		if len(specs) == 0 {
			return nil
		}
		bs := make([]bucket, len(specs))
		for i, b := range specs {
			bs[i] = bucket{tokens: float64(b.Rate), last: now}
		}
		return bs
	}
	l.total = fill(s.total)
	for k := range s.kinds {
		l.kinds[k] = fill(s.kinds[k])
	}
	return l
}

// allow takes a token from every bucket that applies to kind, or from none
// when one of them is empty.
func (l *commandLimiter) allow(k commandKind, now time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	kb, ks := l.kinds[k], l.spec.kinds[k]
	if !refill(l.total, l.spec.total, now) || !refill(kb, ks, now) {
		return false
	}
	take(l.total)
	take(kb)
	return true
}

// refill brings the buckets up to now and reports whether each holds a
// token.
func refill(bs []bucket, specs []RateBucket, now time.Duration) bool {
	ok := true
	for i := range bs {
		b, s := &bs[i], specs[i]
		if elapsed := now - b.last; elapsed > 0 {
			b.tokens += float64(elapsed) * float64(s.Rate) / float64(s.Interval)
			b.tokens = min(b.tokens, float64(s.Rate))
			b.last = now
		}
		if b.tokens < 1 {
			ok = false
		}
	}
	return ok
}

func take(bs []bucket) {
	for i := range bs {
		bs[i].tokens--
	}
}

// rateLimits is the node's part: the specs, the clock and the users'
// shared limiters.
type rateLimits struct {
	client, user *rateSpec
	disconnect   bool
	now          func() time.Duration

	mu    sync.Mutex
	users map[string]*commandLimiter
}

func newRateLimits(c RateLimitConfig) (*rateLimits, error) {
	if err := c.Client.validate("Client"); err != nil {
		return nil, err
	}
	if err := c.User.validate("User"); err != nil {
		return nil, err
	}
	r := &rateLimits{client: newRateSpec(c.Client), user: newRateSpec(c.User), disconnect: c.Disconnect, now: c.Now}
	if r.client == nil && r.user == nil {
		return nil, nil
	}
	if r.now == nil {
		start := time.Now()
		r.now = func() time.Duration { return time.Since(start) }
	}
	r.users = map[string]*commandLimiter{}
	return r, nil
}

// acquireUser returns the limiter shared by user's connections.
func (r *rateLimits) acquireUser(user string) *commandLimiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.users[user]
	if l == nil {
		l = newCommandLimiter(r.user, r.now())
		r.users[user] = l
	}
	l.refs++
	return l
}

// releaseUser drops a connection's share; the last one removes the user's
// buckets, so a user who reconnects at once starts with full buckets on
// this node (as on any other node).
func (r *rateLimits) releaseUser(user string, l *commandLimiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l.refs--
	if l.refs <= 0 && r.users[user] == l {
		delete(r.users, user)
	}
}

// clientLimits is a connection's part, nil when no limit applies to it.
type clientLimits struct {
	node *rateLimits
	conn *commandLimiter // nil without client limits
	user *commandLimiter // nil without user limits or for anonymous
	name string          // user of the shared limiter
	// logged is set once a refusal was logged at info; read and written
	// by the connection's command loop only.
	logged bool
}

func (r *rateLimits) forClient(user string) *clientLimits {
	cl := &clientLimits{node: r, name: user}
	if r.client != nil {
		cl.conn = newCommandLimiter(r.client, r.now())
	}
	if r.user != nil && user != "" {
		cl.user = r.acquireUser(user)
	}
	if cl.conn == nil && cl.user == nil {
		return nil
	}
	return cl
}

func (cl *clientLimits) release() {
	if cl.user != nil {
		cl.node.releaseUser(cl.name, cl.user)
	}
}

// allow checks a command against the connection's and the user's buckets.
// A command refused by the user's buckets has still used the connection's
// token: a client hammering the server pays on both.
func (cl *clientLimits) allow(cmd *protocol.Command) bool {
	k := kindOf(cmd)
	now := cl.node.now()
	if cl.conn != nil && !cl.conn.allow(k, now) {
		return false
	}
	return cl.user == nil || cl.user.allow(k, now)
}
