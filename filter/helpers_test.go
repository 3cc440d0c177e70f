package filter

import (
	"testing"

	"github.com/gyrehq/gyre/protocol"
)

// Tree builders keep test tables short.

func leaf(key, cmp, val string) *protocol.FilterNode {
	return &protocol.FilterNode{Key: key, Cmp: cmp, Val: val}
}

func list(key, cmp string, vals ...string) *protocol.FilterNode {
	return &protocol.FilterNode{Key: key, Cmp: cmp, Vals: vals}
}

func branch(op string, nodes ...*protocol.FilterNode) *protocol.FilterNode {
	return &protocol.FilterNode{Op: op, Nodes: nodes}
}

func mustCompile(t testing.TB, n *protocol.FilterNode) *Filter {
	t.Helper()
	f, err := Compile(n, Limits{})
	if err != nil {
		t.Fatalf("Compile(%s): %v", Format(n), err)
	}
	return f
}

func mustParse(t testing.TB, expr string) *protocol.FilterNode {
	t.Helper()
	n, err := Parse(expr)
	if err != nil {
		t.Fatalf("Parse(%q): %v", expr, err)
	}
	return n
}
