package filter

import "strings"

// opcode is what a compiled node does; the protocol's op and cmp strings are resolved
// once, at Compile time.
type opcode uint8

const (
	opAnd opcode = iota
	opOr
	opNot
	opEq
	opNeq
	opIn
	opNin
	opEx
	opNex
	opSw
	opEw
	opCt
	opGt
	opGte
	opLt
	opLte
	opNever // a numeric comparison whose operand is not a number
)

// setThreshold is the list length from which in and nin look values up in a map
// rather than scanning; below it a scan over a few short strings is faster than
// hashing the tag value.
const setThreshold = 8

// node is one compiled node. Leaves keep their operand in the form Match needs: the
// decimal of a numeric comparison, a set for a long in/nin list.
type node struct {
	op   opcode
	key  string
	val  string
	num  decimal
	vals []string
	set  map[string]struct{}
	kids []node
}

// eval is the whole of evaluation: a switch per node, one map lookup per leaf, no
// allocation.
func (n *node) eval(tags map[string]string) bool {
	switch n.op {
	case opAnd:
		for i := range n.kids {
			if !n.kids[i].eval(tags) {
				return false
			}
		}
		return true
	case opOr:
		for i := range n.kids {
			if n.kids[i].eval(tags) {
				return true
			}
		}
		return false
	case opNot:
		return !n.kids[0].eval(tags)
	}
	v, ok := tags[n.key]
	switch n.op {
	case opEq:
		return ok && v == n.val
	case opNeq:
		return !ok || v != n.val
	case opIn:
		return n.contains(v) // a missing key reads as "", as in Centrifugo
	case opNin:
		return !n.contains(v)
	case opEx:
		return ok
	case opNex:
		return !ok
	case opSw:
		return ok && strings.HasPrefix(v, n.val)
	case opEw:
		return ok && strings.HasSuffix(v, n.val)
	case opCt:
		return ok && strings.Contains(v, n.val)
	case opGt, opGte, opLt, opLte:
		return ok && n.compare(v)
	}
	return false
}

func (n *node) contains(v string) bool {
	if n.set != nil {
		_, ok := n.set[v]
		return ok
	}
	for _, s := range n.vals {
		if s == v {
			return true
		}
	}
	return false
}

func (n *node) compare(v string) bool {
	d, ok := parseDecimal(v)
	if !ok {
		return false
	}
	c := d.cmp(&n.num)
	switch n.op {
	case opGt:
		return c > 0
	case opGte:
		return c >= 0
	case opLt:
		return c < 0
	}
	return c <= 0
}
