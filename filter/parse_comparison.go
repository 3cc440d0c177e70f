package filter

import (
	"strconv"

	"github.com/gyrehq/gyre/protocol"
)

var comparisonOperators = []string{"==", "!=", "<", "<=", ">", ">=", "in", "not in", "startswith", "endswith", "contains"}

var orderCmps = map[tokenKind]string{tokLt: CmpLt, tokLe: CmpLte, tokGt: CmpGt, tokGe: CmpGte}

var wordCmps = map[string]string{"startswith": CmpSw, "endswith": CmpEw, "contains": CmpCt}

// comparison = key operator operand; see the grammar in the package documentation.
func (p *parser) comparison() (*protocol.FilterNode, *SyntaxError) {
	key, err := p.key()
	if err != nil {
		return nil, err
	}
	op := p.tok
	switch {
	case op.kind == tokEq || op.kind == tokNe:
		return p.equality(key, op.kind == tokEq)
	case orderCmps[op.kind] != "":
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == tokString && p.tok.val == "" {
			return nil, &SyntaxError{Pos: p.tok.pos, Msg: "empty operand: " + op.text + " compares numbers", Expected: []string{expectNumber}}
		}
		val, err := p.operand(expectNumber, expectString)
		if err != nil {
			return nil, err
		}
		return &protocol.FilterNode{Key: key, Cmp: orderCmps[op.kind], Val: val.val}, nil
	case op.kind == tokIdent && op.text == "in":
		return p.inList(key, CmpIn)
	case op.kind == tokIdent && op.text == "not":
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tokIdent || p.tok.text != "in" {
			return nil, p.unexpected("in")
		}
		return p.inList(key, CmpNin)
	case op.kind == tokIdent && wordCmps[op.text] != "":
		if err := p.advance(); err != nil {
			return nil, err
		}
		val, err := p.operand(expectString)
		if err != nil {
			return nil, err
		}
		return &protocol.FilterNode{Key: key, Cmp: wordCmps[op.text], Val: val.val}, nil
	}
	return nil, p.unexpected(comparisonOperators...)
}

// equality reads the operand of == or !=. A string compares as text; a number compares
// as a decimal, which the protocol spells as a pair of bounds: k >= v && k <= v for ==,
// k < v || k > v for !=.
func (p *parser) equality(key string, eq bool) (*protocol.FilterNode, *SyntaxError) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	val, err := p.operand(expectString, expectNumber)
	if err != nil {
		return nil, err
	}
	switch {
	case val.kind == tokString && eq:
		return &protocol.FilterNode{Key: key, Cmp: CmpEq, Val: val.val}, nil
	case val.kind == tokString:
		return &protocol.FilterNode{Key: key, Cmp: CmpNeq, Val: val.val}, nil
	case eq:
		return numericPair(OpAnd, key, CmpGte, CmpLte, val.val), nil
	}
	return numericPair(OpOr, key, CmpLt, CmpGt, val.val), nil
}

func numericPair(op, key, first, second, val string) *protocol.FilterNode {
	return &protocol.FilterNode{Op: op, Nodes: []*protocol.FilterNode{
		{Key: key, Cmp: first, Val: val},
		{Key: key, Cmp: second, Val: val},
	}}
}

// operand reads a string or number literal, as allowed lists.
func (p *parser) operand(allowed ...string) (token, *SyntaxError) {
	t := p.tok
	ok := false
	for _, a := range allowed {
		ok = ok || a == expectString && t.kind == tokString || a == expectNumber && t.kind == tokNumber
	}
	if !ok {
		err := p.unexpected(allowed...)
		if t.kind == tokNumber {
			err.Msg = "found number " + t.text + ", which this operator compares as text: write " + strconv.Quote(t.text)
		}
		return token{}, err
	}
	return t, p.advance()
}

// inList reads `in ( string {, string} )`, the current token being "in". Values are
// strings only: in compares text, and a bare number would suggest otherwise.
func (p *parser) inList(key, cmp string) (*protocol.FilterNode, *SyntaxError) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind != tokLParen {
		return nil, p.unexpected("(")
	}
	n := &protocol.FilterNode{Key: key, Cmp: cmp}
	for {
		if err := p.advance(); err != nil { // "(" or ","
			return nil, err
		}
		v, err := p.operand(expectString)
		if err != nil {
			return nil, err
		}
		n.Vals = append(n.Vals, v.val)
		switch p.tok.kind {
		case tokComma:
			continue
		case tokRParen:
			return n, p.advance()
		}
		return nil, p.unexpected(",", ")")
	}
}
