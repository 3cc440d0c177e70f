package filter

import (
	"errors"

	"github.com/gyrehq/gyre/protocol"
)

// ErrInvalid is wrapped by every error that [Compile] returns for a tree it refuses,
// and matched (through errors.Is) by every [*SyntaxError] from [Parse]. The engine
// answers a subscription whose filter is invalid with error 107 (bad request).
var ErrInvalid = errors.New("filter: invalid filter")

// Default limits, used where a [Limits] field is zero.
const (
	DefaultMaxDepth    = 8
	DefaultMaxNodes    = 64
	DefaultMaxValues   = 256
	DefaultMaxValueLen = 256
)

// Limits bound what a filter may cost: a filter arrives from an untrusted client, is
// kept for the life of the subscription and runs on every publication of the channel.
// The zero value gives the defaults; a negative field lifts that limit.
type Limits struct {
	// MaxDepth is how deeply nodes may nest; a single comparison has depth 1.
	// Zero means DefaultMaxDepth.
	MaxDepth int
	// MaxNodes is how many nodes the tree may hold, branches and leaves together.
	// Zero means DefaultMaxNodes.
	MaxNodes int
	// MaxValues is how many values all in and nin lists of the tree may hold together.
	// Zero means DefaultMaxValues.
	MaxValues int
	// MaxValueLen is the longest key or value, in bytes. Zero means DefaultMaxValueLen.
	MaxValueLen int
}

// Unlimited lifts every limit; for trees that come from trusted configuration.
var Unlimited = Limits{MaxDepth: -1, MaxNodes: -1, MaxValues: -1, MaxValueLen: -1}

func (l Limits) withDefaults() Limits {
	l.MaxDepth = limitOr(l.MaxDepth, DefaultMaxDepth)
	l.MaxNodes = limitOr(l.MaxNodes, DefaultMaxNodes)
	l.MaxValues = limitOr(l.MaxValues, DefaultMaxValues)
	l.MaxValueLen = limitOr(l.MaxValueLen, DefaultMaxValueLen)
	return l
}

func limitOr(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return int(^uint(0) >> 1)
	}
	return v
}

// Filter is a compiled tag filter. It is immutable and safe for concurrent use; a nil
// *Filter is valid and matches every publication, so that a subscription without a
// filter needs no special case.
type Filter struct {
	root node
}

// Compile checks a filter tree and turns it into a [Filter]. A nil tree gives a nil
// *Filter (which matches everything) and no error. A tree that breaks the rules in the
// package documentation or exceeds lim gives an error wrapping [ErrInvalid] that names
// the offending node by its path, such as "root.nodes[1]".
func Compile(n *protocol.FilterNode, lim Limits) (*Filter, error) {
	if n == nil {
		return nil, nil
	}
	c := compiler{lim: lim.withDefaults()}
	root, err := c.compile(n, "root", 1)
	if err != nil {
		return nil, err
	}
	return &Filter{root: root}, nil
}

// Match reports whether a publication with these tags passes the filter. It allocates
// nothing. A nil tags map is a publication without tags.
func (f *Filter) Match(tags map[string]string) bool {
	if f == nil {
		return true
	}
	return f.root.eval(tags)
}

// And returns a filter that passes what both a and b pass, evaluating a first. It is
// how a filter the server enforces (from a token or a proxy) is combined with the one
// the client asked for: put the server's first, so a publication it refuses costs no
// more. A nil argument stands for "everything", so And(nil, b) is b.
func And(a, b *Filter) *Filter {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &Filter{root: node{op: opAnd, kids: []node{a.root, b.root}}}
}
