package filter

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/gyrehq/gyre/protocol"
)

// The protocol's names for branch operations and comparisons.
const (
	OpAnd = "and"
	OpOr  = "or"
	OpNot = "not"

	CmpEq  = "eq"
	CmpNeq = "neq"
	CmpIn  = "in"
	CmpNin = "nin"
	CmpEx  = "ex"
	CmpNex = "nex"
	CmpSw  = "sw"
	CmpEw  = "ew"
	CmpCt  = "ct"
	CmpGt  = "gt"
	CmpGte = "gte"
	CmpLt  = "lt"
	CmpLte = "lte"
)

// operand says what a comparison takes besides its key.
type operand uint8

const (
	operandNone   operand = iota // ex, nex
	operandString                // eq, neq, sw, ew, ct: val, may be empty
	operandNumber                // gt, gte, lt, lte: val, not empty
	operandList                  // in, nin: vals, at least one
)

var comparisons = map[string]struct {
	op  opcode
	arg operand
}{
	CmpEq: {opEq, operandString}, CmpNeq: {opNeq, operandString},
	CmpIn: {opIn, operandList}, CmpNin: {opNin, operandList},
	CmpEx: {opEx, operandNone}, CmpNex: {opNex, operandNone},
	CmpSw: {opSw, operandString}, CmpEw: {opEw, operandString}, CmpCt: {opCt, operandString},
	CmpGt: {opGt, operandNumber}, CmpGte: {opGte, operandNumber},
	CmpLt: {opLt, operandNumber}, CmpLte: {opLte, operandNumber},
}

// compiler walks a tree once, checking it against the limits as it goes so that an
// oversized tree is refused before it is walked to the end.
type compiler struct {
	lim    Limits
	nodes  int
	values int
}

func (c *compiler) fail(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, path, fmt.Sprintf(format, args...))
}

func (c *compiler) compile(n *protocol.FilterNode, path string, depth int) (node, error) {
	if n == nil {
		return node{}, c.fail(path, "nil node")
	}
	if depth > c.lim.MaxDepth {
		return node{}, c.fail(path, "nested deeper than %d levels", c.lim.MaxDepth)
	}
	if c.nodes++; c.nodes > c.lim.MaxNodes {
		return node{}, c.fail(path, "more than %d nodes", c.lim.MaxNodes)
	}
	switch n.Op {
	case "":
		return c.leaf(n, path)
	case OpAnd, OpOr, OpNot:
		return c.branch(n, path, depth)
	}
	return node{}, c.fail(path, "unknown op %q", n.Op)
}

func (c *compiler) branch(n *protocol.FilterNode, path string, depth int) (node, error) {
	if n.Key != "" || n.Cmp != "" || n.Val != "" || len(n.Vals) > 0 {
		return node{}, c.fail(path, "%s node has key, cmp, val or vals, which belong to comparisons", n.Op)
	}
	switch {
	case len(n.Nodes) == 0:
		return node{}, c.fail(path, "%s node without nodes", n.Op)
	case n.Op == OpNot && len(n.Nodes) != 1:
		return node{}, c.fail(path, "not node with %d nodes, needs exactly 1", len(n.Nodes))
	}
	out := node{op: opAnd, kids: make([]node, len(n.Nodes))}
	switch n.Op {
	case OpOr:
		out.op = opOr
	case OpNot:
		out.op = opNot
	}
	for i, kid := range n.Nodes {
		k, err := c.compile(kid, path+".nodes["+strconv.Itoa(i)+"]", depth+1)
		if err != nil {
			return node{}, err
		}
		out.kids[i] = k
	}
	return out, nil
}

func (c *compiler) leaf(n *protocol.FilterNode, path string) (node, error) {
	if len(n.Nodes) > 0 {
		return node{}, c.fail(path, "comparison with nodes (op missing?)")
	}
	if n.Cmp == "" {
		return node{}, c.fail(path, "comparison without cmp")
	}
	spec, ok := comparisons[n.Cmp]
	if !ok {
		return node{}, c.fail(path, "unknown cmp %q", n.Cmp)
	}
	if n.Key == "" {
		return node{}, c.fail(path, "%s without key", n.Cmp)
	}
	if len(n.Key) > c.lim.MaxValueLen {
		return node{}, c.fail(path, "key longer than %d bytes", c.lim.MaxValueLen)
	}
	if err := c.checkOperand(n, spec.arg, path); err != nil {
		return node{}, err
	}
	out := node{op: spec.op, key: n.Key, val: n.Val}
	switch spec.arg {
	case operandNumber:
		if out.num, ok = parseDecimal(n.Val); !ok {
			out.op = opNever // as in Centrifugo: accepted, and never true
		}
	case operandList:
		out.vals = slices.Clone(n.Vals)
		if len(n.Vals) >= setThreshold {
			out.set = make(map[string]struct{}, len(n.Vals))
			for _, v := range n.Vals {
				out.set[v] = struct{}{}
			}
		}
	}
	return out, nil
}

func (c *compiler) checkOperand(n *protocol.FilterNode, arg operand, path string) error {
	switch arg {
	case operandNone:
		if n.Val != "" || len(n.Vals) > 0 {
			return c.fail(path, "%s takes neither val nor vals", n.Cmp)
		}
	case operandString, operandNumber:
		if len(n.Vals) > 0 {
			return c.fail(path, "%s takes val, not vals", n.Cmp)
		}
		if arg == operandNumber && n.Val == "" {
			return c.fail(path, "%s without val", n.Cmp)
		}
		if len(n.Val) > c.lim.MaxValueLen {
			return c.fail(path, "val longer than %d bytes", c.lim.MaxValueLen)
		}
	case operandList:
		if n.Val != "" {
			return c.fail(path, "%s takes vals, not val", n.Cmp)
		}
		if len(n.Vals) == 0 {
			return c.fail(path, "%s without vals", n.Cmp)
		}
		if c.values += len(n.Vals); c.values > c.lim.MaxValues {
			return c.fail(path, "more than %d values in lists", c.lim.MaxValues)
		}
		for i, v := range n.Vals {
			if len(v) > c.lim.MaxValueLen {
				return c.fail(path, "vals[%d] longer than %d bytes", i, c.lim.MaxValueLen)
			}
		}
	}
	return nil
}
