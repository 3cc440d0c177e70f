package filter

import (
	"strconv"
	"strings"

	"github.com/gyrehq/gyre/protocol"
)

// Format writes a tree as an expression, with as few parentheses as the grammar needs.
// For every tree that Compile accepts, Parse(Format(n)) returns an equal tree. Parts of
// an invalid tree are written as <invalid …>, which Parse refuses.
func Format(n *protocol.FilterNode) string {
	var b strings.Builder
	writeNode(&b, n, ctxTop)
	return b.String()
}

// context is where a node is written, which decides whether it needs parentheses.
type context uint8

const (
	ctxTop context = iota // the whole expression, inside parentheses or a call
	ctxOr                 // an operand of ||
	ctxAnd                // an operand of &&
	ctxNot                // the operand of !
)

// level is how loosely a node binds when written.
type level uint8

const (
	levelAtom level = iota
	levelAnd
	levelOr
)

func nodeLevel(n *protocol.FilterNode) level {
	switch {
	case n == nil || len(n.Nodes) < 2 || numericEquality(n) != "":
		return levelAtom
	case n.Op == OpAnd:
		return levelAnd
	case n.Op == OpOr:
		return levelOr
	}
	return levelAtom
}

func needsParens(n *protocol.FilterNode, ctx context) bool {
	lv := nodeLevel(n)
	switch ctx {
	case ctxOr:
		return lv == levelOr // a nested || stays nested
	case ctxAnd:
		return lv != levelAtom
	case ctxNot:
		// Only "!" itself, "!exists(k)" and all/any calls read unambiguously after
		// another "!"; a comparison could, but "!(a == 1)" is kinder to the reader,
		// and "!(exists(k))" must differ from "!exists(k)", which is nex.
		return lv != levelAtom || n == nil || n.Op == "" && n.Cmp != CmpNex ||
			numericEquality(n) != ""
	}
	return false
}

func writeNode(b *strings.Builder, n *protocol.FilterNode, ctx context) {
	if needsParens(n, ctx) {
		b.WriteByte('(')
		defer b.WriteByte(')')
	}
	switch {
	case n == nil:
		b.WriteString("<invalid nil node>")
	case n.Op == "":
		writeLeaf(b, n)
	case numericEquality(n) != "":
		writeKey(b, n.Nodes[0].Key)
		b.WriteString(" " + numericEquality(n) + " " + n.Nodes[0].Val)
	case n.Op == OpNot && len(n.Nodes) == 1:
		b.WriteByte('!')
		writeNode(b, n.Nodes[0], ctxNot)
	case (n.Op == OpAnd || n.Op == OpOr) && len(n.Nodes) >= 2:
		writeChain(b, n)
	case n.Op == OpAnd || n.Op == OpOr:
		writeCall(b, n)
	default:
		b.WriteString("<invalid op " + strconv.Quote(n.Op) + " with " + strconv.Itoa(len(n.Nodes)) + " nodes>")
	}
}

func writeChain(b *strings.Builder, n *protocol.FilterNode) {
	sep, ctx := " && ", ctxAnd
	if n.Op == OpOr {
		sep, ctx = " || ", ctxOr
	}
	for i, kid := range n.Nodes {
		if i > 0 {
			b.WriteString(sep)
		}
		writeNode(b, kid, ctx)
	}
}

// writeCall writes an and/or node with fewer than two children as all(…) or any(…).
func writeCall(b *strings.Builder, n *protocol.FilterNode) {
	if n.Op == OpAnd {
		b.WriteString("all(")
	} else {
		b.WriteString("any(")
	}
	for i, kid := range n.Nodes {
		if i > 0 {
			b.WriteString(", ")
		}
		writeNode(b, kid, ctxTop)
	}
	b.WriteByte(')')
}

// numericEquality returns "==" or "!=" for the pair of bounds that Parse makes of a
// comparison with a number (k >= v && k <= v, k < v || k > v), so that it is written
// back the way it was read; "" for any other node.
func numericEquality(n *protocol.FilterNode) string {
	if n == nil || len(n.Nodes) != 2 || n.Key != "" || n.Cmp != "" || n.Val != "" || len(n.Vals) > 0 {
		return ""
	}
	a, c := n.Nodes[0], n.Nodes[1]
	if a == nil || c == nil || !plainBound(a) || !plainBound(c) ||
		a.Key != c.Key || a.Val != c.Val || !isNumberLiteral(a.Val) {
		return ""
	}
	switch {
	case n.Op == OpAnd && a.Cmp == CmpGte && c.Cmp == CmpLte:
		return "=="
	case n.Op == OpOr && a.Cmp == CmpLt && c.Cmp == CmpGt:
		return "!="
	}
	return ""
}

func plainBound(n *protocol.FilterNode) bool {
	return n.Op == "" && n.Key != "" && len(n.Vals) == 0 && len(n.Nodes) == 0
}

var leafOperators = map[string]string{
	CmpEq: "==", CmpNeq: "!=", CmpGt: ">", CmpGte: ">=", CmpLt: "<", CmpLte: "<=",
	CmpSw: "startswith", CmpEw: "endswith", CmpCt: "contains", CmpIn: "in", CmpNin: "not in",
}

func writeLeaf(b *strings.Builder, n *protocol.FilterNode) {
	switch n.Cmp {
	case CmpEx, CmpNex:
		if n.Cmp == CmpNex {
			b.WriteByte('!')
		}
		b.WriteString("exists(")
		writeKey(b, n.Key)
		b.WriteByte(')')
		return
	}
	op, ok := leafOperators[n.Cmp]
	if !ok {
		b.WriteString("<invalid cmp " + strconv.Quote(n.Cmp) + ">")
		return
	}
	writeKey(b, n.Key)
	b.WriteString(" " + op + " ")
	switch n.Cmp {
	case CmpIn, CmpNin:
		b.WriteByte('(')
		for i, v := range n.Vals {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(v))
		}
		b.WriteByte(')')
	case CmpGt, CmpGte, CmpLt, CmpLte:
		if isNumberLiteral(n.Val) {
			b.WriteString(n.Val)
		} else {
			b.WriteString(strconv.Quote(n.Val))
		}
	default:
		b.WriteString(strconv.Quote(n.Val))
	}
}

func writeKey(b *strings.Builder, key string) {
	if isIdent(key) {
		b.WriteString(key)
		return
	}
	b.WriteString(strconv.Quote(key))
}
