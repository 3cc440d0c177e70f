package filter

import (
	"errors"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/protocol"
)

func TestCompileRefuses(t *testing.T) {
	ok := leaf("a", CmpEq, "1")
	cases := []struct {
		name string
		node *protocol.FilterNode
		lim  Limits
		want string // in the error message
	}{
		{"unknown op", &protocol.FilterNode{Op: "xor", Nodes: []*protocol.FilterNode{ok, ok}}, Limits{}, `root: unknown op "xor"`},
		{"unknown cmp", leaf("a", "like", "x"), Limits{}, `root: unknown cmp "like"`},
		{"no cmp", leaf("a", "", "x"), Limits{}, "root: comparison without cmp"},
		{"no key", leaf("", CmpEq, "x"), Limits{}, "root: eq without key"},
		{"ex no key", leaf("", CmpEx, ""), Limits{}, "root: ex without key"},
		{"leaf with nodes", &protocol.FilterNode{Key: "a", Cmp: CmpEq, Nodes: []*protocol.FilterNode{ok}}, Limits{}, "comparison with nodes"},
		{"and empty", branch(OpAnd), Limits{}, "root: and node without nodes"},
		{"or empty", branch(OpOr), Limits{}, "root: or node without nodes"},
		{"not empty", branch(OpNot), Limits{}, "root: not node without nodes"},
		{"not two", branch(OpNot, ok, ok), Limits{}, "root: not node with 2 nodes, needs exactly 1"},
		{"branch with key", &protocol.FilterNode{Op: OpAnd, Key: "a", Nodes: []*protocol.FilterNode{ok}}, Limits{}, "belong to comparisons"},
		{"nil child", branch(OpAnd, ok, nil), Limits{}, "root.nodes[1]: nil node"},
		{"deep path", branch(OpOr, ok, branch(OpAnd, ok, leaf("b", "zz", ""))), Limits{}, `root.nodes[1].nodes[1]: unknown cmp "zz"`},
		{"in no vals", list("a", CmpIn), Limits{}, "root: in without vals"},
		{"nin no vals", list("a", CmpNin), Limits{}, "root: nin without vals"},
		{"in with val", &protocol.FilterNode{Key: "a", Cmp: CmpIn, Val: "x", Vals: []string{"x"}}, Limits{}, "in takes vals, not val"},
		{"eq with vals", list("a", CmpEq, "x"), Limits{}, "eq takes val, not vals"},
		{"ex with val", leaf("a", CmpEx, "x"), Limits{}, "ex takes neither val nor vals"},
		{"nex with vals", list("a", CmpNex, "x"), Limits{}, "nex takes neither val nor vals"},
		{"gt no val", leaf("a", CmpGt, ""), Limits{}, "root: gt without val"},
		{"too deep", nest(9), Limits{}, "nested deeper than 8 levels"},
		{"too deep custom", nest(3), Limits{MaxDepth: 2}, "root.nodes[0].nodes[0]: nested deeper than 2 levels"},
		{"too many nodes", wide(64), Limits{}, "more than 64 nodes"},
		{"too many nodes custom", wide(3), Limits{MaxNodes: 3}, "root.nodes[2]: more than 3 nodes"},
		{"too many values", list("a", CmpIn, manyValues("v", 257)...), Limits{}, "more than 256 values"},
		{"too many values across lists", branch(OpAnd, list("a", CmpIn, "1", "2"), list("b", CmpNin, "3", "4")), Limits{MaxValues: 3}, "root.nodes[1]: more than 3 values"},
		{"long key", leaf(strings.Repeat("k", 257), CmpEq, "x"), Limits{}, "key longer than 256 bytes"},
		{"long val", leaf("a", CmpEq, strings.Repeat("v", 257)), Limits{}, "val longer than 256 bytes"},
		{"long list value", list("a", CmpIn, "x", strings.Repeat("v", 9)), Limits{MaxValueLen: 8}, "vals[1] longer than 8 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(tc.node, tc.lim)
			if err == nil {
				t.Fatalf("Compile accepted it: %v", f)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "filter: ") {
				t.Errorf("error %q does not start with the package name", err)
			}
		})
	}
}

func TestCompileAccepts(t *testing.T) {
	cases := []struct {
		name string
		node *protocol.FilterNode
		lim  Limits
	}{
		{"eq empty val", leaf("a", CmpEq, ""), Limits{}},
		{"sw empty val", leaf("a", CmpSw, ""), Limits{}},
		{"gt not a number", leaf("a", CmpGt, "abc"), Limits{}},
		{"depth at limit", nest(8), Limits{}},
		{"nodes at limit", wide(63), Limits{}},
		{"values at limit", list("a", CmpIn, manyValues("v", 256)...), Limits{}},
		{"value at limit", leaf("a", CmpEq, strings.Repeat("v", 256)), Limits{}},
		{"unlimited depth", nest(100), Unlimited},
		{"unlimited nodes", wide(1000), Unlimited},
		{"negative lifts one limit", nest(20), Limits{MaxDepth: -1}},
		{"unicode key", leaf("città", CmpEq, "☃"), Limits{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Compile(tc.node, tc.lim); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// nest returns a tree of the given depth: nots around a comparison.
func nest(depth int) *protocol.FilterNode {
	n := leaf("a", CmpEq, "1")
	for range depth - 1 {
		n = branch(OpNot, n)
	}
	return n
}

// wide returns an or of n comparisons: n+1 nodes.
func wide(n int) *protocol.FilterNode {
	b := branch(OpOr)
	for range n {
		b.Nodes = append(b.Nodes, leaf("a", CmpEq, "1"))
	}
	return b
}

// TestCompileKeepsNoReference checks that a compiled filter does not change when the
// caller reuses the tree it was compiled from.
func TestCompileKeepsNoReference(t *testing.T) {
	n := branch(OpAnd, leaf("a", CmpEq, "1"), leaf("b", CmpGt, "5"), list("c", CmpIn, "x"))
	f := mustCompile(t, n)
	n.Op = OpOr
	n.Nodes[0].Val = "2"
	n.Nodes[1].Val = "50"
	n.Nodes[2].Vals[0] = "y"
	if !f.Match(map[string]string{"a": "1", "b": "6", "c": "x"}) {
		t.Error("filter changed with the tree it was compiled from")
	}
}
