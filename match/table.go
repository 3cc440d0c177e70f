package match

import "sync/atomic"

// table holds the literal children of a node: an open-addressing hash table
// with linear probing whose slots are atomic, so that a writer adds or
// removes one child by storing into one slot, and the siblings stay where
// they are. Readers probe it without locks while a writer changes it:
//
//   - a slot goes from nil to a child, from a child to the index's tombstone,
//     and from the tombstone to a child; never back to nil. A reader stops at
//     the first nil slot, so it cannot stop short of a child that was there
//     when it started, and nothing a writer does moves a child;
//   - at least a quarter of the slots stay nil, so every probe ends;
//   - when tombstones and children fill three quarters of the slots, or
//     children fall below an eighth, the writer builds a new table of the
//     right size and publishes it through the parent's pointer. The old table
//     is left untouched for the readers still in it, and the nodes are shared,
//     not copied.
//
// A slot keeps its child's hash beside the pointer, so a probe reads a child
// only when the hashes are equal: at 100,000 patterns the trie does not fit
// in a core's caches, and each node read is a likely miss.
type table[V any] struct {
	slots []slot[V]
	live  uint32 // children; writers only
	used  uint32 // children and tombstones; writers only
}

// slot holds a child and its hash. A writer stores the hash before the
// child, so a reader that loads a child and then the hash sees that child's
// hash or, if the slot changed meanwhile, a later one. Such a stale pair
// (the token is compared too) leads at worst into a child removed a moment
// ago, as a reader a moment earlier would have gone.
type slot[V any] struct {
	hash atomic.Uint64
	node atomic.Pointer[node[V]]
}

// newTable returns a table with room for children. Small tables, most of
// them, are one block with their slots, so that a lookup reads one place.
func newTable[V any](children int) *table[V] {
	n := 2
	for n < 2*children {
		n *= 2
	}
	switch n {
	case 2:
		b := new(struct {
			t table[V]
			s [2]slot[V]
		})
		b.t.slots = b.s[:]
		return &b.t
	case 4:
		b := new(struct {
			t table[V]
			s [4]slot[V]
		})
		b.t.slots = b.s[:]
		return &b.t
	case 8:
		b := new(struct {
			t table[V]
			s [8]slot[V]
		})
		b.t.slots = b.s[:]
		return &b.t
	}
	return &table[V]{slots: make([]slot[V], n)}
}

// find returns the child for token, whose hash is h, or nil. A tombstone's
// token is "." and a token never contains one, so it needs no check here.
func (t *table[V]) find(token string, h uint64) *node[V] {
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		n := s.node.Load()
		if n == nil || s.hash.Load() == h && n.token == token {
			return n
		}
	}
}

// full reports whether one more child would leave less than a quarter of the
// slots nil.
func (t *table[V]) full() bool {
	return (int(t.used)+1)*4 > len(t.slots)*3
}

// sparse reports whether the table is worth shrinking.
func (t *table[V]) sparse() bool {
	return len(t.slots) > 8 && int(t.live)*8 < len(t.slots)
}

// add stores child, whose token is not in the table and hashes to h, in the
// first free slot of its probe sequence (a tombstone or nil). The caller has
// checked that the table is not full.
func (t *table[V]) add(child *node[V], h uint64, tomb *node[V]) {
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		n := s.node.Load()
		if n == nil || n == tomb {
			if n == nil {
				t.used++
			}
			t.live++
			s.hash.Store(h)
			s.node.Store(child)
			return
		}
	}
}

// remove puts a tombstone in the slot of the child for token, which hashes to
// h, if there is one.
func (t *table[V]) remove(token string, h uint64, tomb *node[V]) bool {
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		n := s.node.Load()
		if n == nil {
			return false
		}
		if n != tomb && n.token == token {
			s.node.Store(tomb)
			t.live--
			return true
		}
	}
}

// resized returns a new table with the children of t and room for extra
// more, without tombstones.
func (t *table[V]) resized(extra int, tomb *node[V]) *table[V] {
	nt := newTable[V](int(t.live) + extra)
	for i := range t.slots {
		s := &t.slots[i]
		if n := s.node.Load(); n != nil && n != tomb {
			nt.add(n, s.hash.Load(), tomb)
		}
	}
	return nt
}
