package match

import "strings"

// Match calls fn with the value of every pattern that matches topic, each
// once and in no particular order, until fn returns false. It does not
// allocate.
//
// The topic is split on '.'; a pattern token "*" matches any one token, the
// empty one included; a last token ">" matches one or more tokens; any other
// pattern token matches the equal token. A '*' or '>' in topic is an ordinary
// character, not a wildcard: a topic token "*" is matched by the pattern
// tokens "*" and ">", as any token is, and by no literal pattern token, since
// a valid pattern has none that contains one.
//
// Match holds no lock: fn may call any method of x, and a pattern that is
// set or deleted meanwhile, by fn or another goroutine, may or may not be
// seen.
func (x *Index[V]) Match(topic string, fn func(V) bool) {
	m := matcher[V]{x: x, topic: topic, fn: fn}
	m.walk(&x.root, 0, 0)
}

// AppendMatches appends the value of every pattern that matches topic to dst
// and returns the extended slice. It allocates only when dst runs out of
// room.
func (x *Index[V]) AppendMatches(dst []V, topic string) []V {
	x.Match(topic, func(v V) bool {
		dst = append(dst, v)
		return true
	})
	return dst
}

// cachedDepths is how many topic tokens a matcher remembers the end and the
// hash of. Topics are rarely deeper; past it they are found at each node.
const cachedDepths = 8

// matcher is the state of one Match call, on the caller's stack. The walk
// reaches several nodes at the same depth (through "*" and through the
// literal), and every table of an index hashes with the same seed, so a
// token's end and hash, once found, serve every node at its depth.
type matcher[V any] struct {
	x      *Index[V]
	topic  string
	fn     func(V) bool
	hashed uint32               // bit d: hashes[d] is set
	ends   [cachedDepths]int    // end of token d, plus 1; 0 until found
	hashes [cachedDepths]uint64 // hash of token d
}

// walk matches the rest of the topic, from byte start (past its end when the
// topic is used up), against the subtree of n, which is depth tokens deep.
// It returns false once fn has.
func (m *matcher[V]) walk(n *node[V], start, depth int) bool {
	if start > len(m.topic) {
		if v := n.exact.Load(); v != nil {
			return m.fn(*v)
		}
		return true
	}
	// At least one token is left: a ">" here matches it and all after it.
	if v := n.rest.Load(); v != nil && !m.fn(*v) {
		return false
	}
	end := m.end(start, depth)
	if c := n.star.Load(); c != nil && !m.walk(c, end+1, depth+1) {
		return false
	}
	t := n.kids.Load()
	if t == nil {
		return true
	}
	tok := m.topic[start:end]
	if c := t.find(tok, m.hash(tok, depth)); c != nil {
		return m.walk(c, end+1, depth+1)
	}
	return true
}

// end returns the end of the token at depth, which starts at start.
func (m *matcher[V]) end(start, depth int) int {
	if depth < cachedDepths && m.ends[depth] != 0 {
		return m.ends[depth] - 1
	}
	end := strings.IndexByte(m.topic[start:], '.')
	if end < 0 {
		end = len(m.topic)
	} else {
		end += start
	}
	if depth < cachedDepths {
		m.ends[depth] = end + 1
	}
	return end
}

func (m *matcher[V]) hash(tok string, depth int) uint64 {
	if depth >= cachedDepths {
		return m.x.hash(tok)
	}
	if m.hashed&(1<<depth) == 0 {
		m.hashes[depth] = m.x.hash(tok)
		m.hashed |= 1 << depth
	}
	return m.hashes[depth]
}
