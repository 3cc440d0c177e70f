package match

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Index maps patterns to values and finds the patterns that match a topic.
//
// Readers ([Index.Match], [Index.AppendMatches], [Index.Get], [Index.Len])
// never block and never allocate. Writers ([Index.Set], [Index.Delete])
// serialize among themselves on a mutex but never stop readers: they publish
// each change with atomic stores, in an order that never shows a reader a
// pattern half set, and a reader sees every pattern that was present for its
// whole call, plus or minus those set or deleted meanwhile.
//
// The zero value is an empty index ready to use. An Index must not be copied
// after first use.
type Index[V any] struct {
	// Readers read the fields up to the padding; writers rarely write them.
	root node[V] // the empty prefix; never pruned
	// seed hashes tokens in every table. It is set before the first table
	// is published, and readers read it only after loading a table, which
	// orders their read after the write.
	seed maphash.Seed
	// tomb marks a removed child in a table (see table). Its token is ".",
	// which no token equals, so readers need not tell it apart.
	tomb node[V]

	// Keeps the fields that every write changes off the cache lines of the
	// fields above, which every Match reads.
	_ [64]byte

	count  atomic.Int64
	mu     sync.Mutex // serializes writers; guards seeded and all writes
	seeded bool
}

// node is the trie node for a prefix of tokens. Everything a reader follows
// is behind an atomic pointer, so a writer changes one field of one node and
// copies nothing else.
type node[V any] struct {
	token string                  // the literal token that leads here from the parent, if any
	exact atomic.Pointer[V]       // value of the pattern that ends here
	rest  atomic.Pointer[V]       // value of the pattern that is this prefix followed by ">"
	star  atomic.Pointer[node[V]] // child for "*"
	kids  atomic.Pointer[table[V]]
	// short holds token when it fits (most do), so that comparing the token
	// reads no memory but the node's own 64 bytes.
	short [16]byte
}

// newLiteral returns an empty node for the literal token tok, with its own
// copy of tok, so that it keeps no caller's string alive.
func newLiteral[V any](tok string) *node[V] {
	n := new(node[V])
	if len(tok) <= len(n.short) {
		copy(n.short[:], tok)
		n.token = unsafe.String(&n.short[0], len(tok))
	} else {
		n.token = strings.Clone(tok)
	}
	return n
}

func (n *node[V]) empty() bool {
	return n.exact.Load() == nil && n.rest.Load() == nil && n.star.Load() == nil && n.kids.Load() == nil
}

// NewIndex returns an empty index. It is the same as new(Index[V]).
func NewIndex[V any]() *Index[V] {
	return new(Index[V])
}

// Len returns the number of patterns in the index.
func (x *Index[V]) Len() int {
	return int(x.count.Load())
}

// Get returns the value of pattern and whether pattern is in the index.
func (x *Index[V]) Get(pattern string) (V, bool) {
	var zero V
	n, last := &x.root, pattern
	for {
		tok, after, more := strings.Cut(last, ".")
		if tok == ">" && !more {
			return load(&n.rest)
		}
		if n = x.child(n, tok); n == nil {
			return zero, false
		}
		if !more {
			return load(&n.exact)
		}
		last = after
	}
}

func load[V any](p *atomic.Pointer[V]) (V, bool) {
	if v := p.Load(); v != nil {
		return *v, true
	}
	var zero V
	return zero, false
}

// child returns the child of n for the pattern token tok ("*" or a literal),
// or nil.
func (x *Index[V]) child(n *node[V], tok string) *node[V] {
	if tok == "*" {
		return n.star.Load()
	}
	if t := n.kids.Load(); t != nil {
		return t.find(tok, x.hash(tok))
	}
	return nil
}

// hash returns the hash of a literal token. Readers call it only after
// loading a table (see Index.seed).
func (x *Index[V]) hash(tok string) uint64 {
	return maphash.String(x.seed, tok)
}

// Set maps pattern to v, replacing the value it had. It returns an error
// wrapping [ErrInvalidPattern], and changes nothing, if pattern is not valid
// (see [ValidPattern]).
func (x *Index[V]) Set(pattern string, v V) error {
	if err := ValidPattern(pattern); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	n, last := &x.root, pattern
	for {
		tok, after, more := strings.Cut(last, ".")
		if tok == ">" {
			x.store(&n.rest, v)
			return nil
		}
		n = x.childForSet(n, tok)
		if !more {
			x.store(&n.exact, v)
			return nil
		}
		last = after
	}
}

func (x *Index[V]) store(p *atomic.Pointer[V], v V) {
	if p.Swap(&v) == nil {
		x.count.Add(1)
	}
}

// childForSet returns the child of n for tok, adding it if it is missing.
// A new child is empty, so readers that find it before the rest of the
// pattern is in place match nothing through it.
func (x *Index[V]) childForSet(n *node[V], tok string) *node[V] {
	if tok == "*" {
		c := n.star.Load()
		if c == nil {
			c = new(node[V])
			n.star.Store(c)
		}
		return c
	}
	if !x.seeded {
		x.seed, x.seeded = maphash.MakeSeed(), true
		x.tomb.token = "."
	}
	t := n.kids.Load()
	if t == nil {
		t = newTable[V](1)
		n.kids.Store(t)
	}
	h := x.hash(tok)
	if c := t.find(tok, h); c != nil {
		return c
	}
	c := newLiteral[V](tok)
	if t.full() {
		t = t.resized(1, &x.tomb)
		t.add(c, h, &x.tomb)
		n.kids.Store(t)
	} else {
		t.add(c, h, &x.tomb)
	}
	return c
}

// Delete removes pattern from the index and reports whether it was there.
// Nodes left empty are removed too, so the index does not grow under churn.
func (x *Index[V]) Delete(pattern string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	// path[i] is the node after i tokens; toks[i] the token from path[i] to
	// path[i+1]. Patterns are short: the arrays are on the stack.
	var pathBuf [16]*node[V]
	var toksBuf [16]string
	path, toks := append(pathBuf[:0], &x.root), toksBuf[:0]
	n, last := &x.root, pattern
	var slot *atomic.Pointer[V]
	for slot == nil {
		tok, after, more := strings.Cut(last, ".")
		if tok == ">" && !more {
			slot = &n.rest
			break
		}
		if n = x.child(n, tok); n == nil {
			return false
		}
		path, toks = append(path, n), append(toks, tok)
		if !more {
			slot = &n.exact
		}
		last = after
	}
	if slot.Swap(nil) == nil {
		return false
	}
	x.count.Add(-1)
	for i := len(toks) - 1; i >= 0 && path[i+1].empty(); i-- {
		x.unlink(path[i], toks[i])
	}
	return true
}

// unlink removes the empty child of n for tok.
func (x *Index[V]) unlink(n *node[V], tok string) {
	if tok == "*" {
		n.star.Store(nil)
		return
	}
	t := n.kids.Load()
	t.remove(tok, x.hash(tok), &x.tomb)
	switch {
	case t.live == 0:
		n.kids.Store(nil)
	case t.sparse():
		n.kids.Store(t.resized(0, &x.tomb))
	}
}
