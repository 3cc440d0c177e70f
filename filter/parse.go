package filter

import (
	"strconv"

	"github.com/gyrehq/gyre/protocol"
)

// maxNesting bounds parentheses, "!" and all/any calls inside one another, so that a
// hostile expression cannot exhaust the stack; trees that deep are refused by Compile
// anyway.
const maxNesting = 256

// Parse reads a filter expression (grammar in the package documentation) and returns
// the protocol tree it stands for. Every tree it returns passes [Compile] with
// [Unlimited]; the default limits may still refuse a large one. Errors are
// [*SyntaxError]s.
func Parse(expr string) (*protocol.FilterNode, error) {
	p := parser{lex: lexer{src: expr}}
	n, err := p.parse()
	if err != nil {
		err.position(expr)
		return nil, err
	}
	return n, nil
}

type parser struct {
	lex     lexer
	tok     token // the current token
	ahead   token // the token after it, when peeked
	peeked  bool
	nesting int
}

func (p *parser) parse() (*protocol.FilterNode, *SyntaxError) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.unexpected("&&", "||", expectEnd)
	}
	return n, nil
}

func (p *parser) advance() *SyntaxError {
	if p.peeked {
		p.tok, p.peeked = p.ahead, false
		return nil
	}
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) peek() (token, *SyntaxError) {
	if !p.peeked {
		t, err := p.lex.next()
		if err != nil {
			return token{}, err
		}
		p.ahead, p.peeked = t, true
	}
	return p.ahead, nil
}

func (p *parser) unexpected(expected ...string) *SyntaxError {
	found := "end of input"
	if p.tok.kind != tokEOF {
		text := p.tok.text
		if len(text) > 40 {
			text = text[:40] + "…"
		}
		found = strconv.Quote(text)
	}
	return &SyntaxError{Pos: p.tok.pos, Msg: "found " + found, Expected: expected}
}

func (p *parser) nest() *SyntaxError {
	if p.nesting++; p.nesting > maxNesting {
		return &SyntaxError{Pos: p.tok.pos, Msg: "nested deeper than " + strconv.Itoa(maxNesting) + " levels"}
	}
	return nil
}

// expr = conj { "||" conj }
func (p *parser) expr() (*protocol.FilterNode, *SyntaxError) {
	return p.chain(tokOr, OpOr, p.conj)
}

// conj = unary { "&&" unary }
func (p *parser) conj() (*protocol.FilterNode, *SyntaxError) {
	return p.chain(tokAnd, OpAnd, p.unary)
}

// chain reads operands joined by one operator into one n-ary node; parenthesized
// operands stay nested, so that every tree has exactly one spelling.
func (p *parser) chain(sep tokenKind, op string, operand func() (*protocol.FilterNode, *SyntaxError)) (*protocol.FilterNode, *SyntaxError) {
	first, err := operand()
	if err != nil || p.tok.kind != sep {
		return first, err
	}
	n := &protocol.FilterNode{Op: op, Nodes: []*protocol.FilterNode{first}}
	for p.tok.kind == sep {
		if err := p.advance(); err != nil {
			return nil, err
		}
		next, err := operand()
		if err != nil {
			return nil, err
		}
		n.Nodes = append(n.Nodes, next)
	}
	return n, nil
}

var unaryStart = []string{"!", "(", "exists", "all", "any", expectKey}

// unary = "!" "exists" "(" key ")" | "!" unary | primary
func (p *parser) unary() (*protocol.FilterNode, *SyntaxError) {
	if p.tok.kind != tokBang {
		return p.primary()
	}
	if err := p.nest(); err != nil {
		return nil, err
	}
	defer func() { p.nesting-- }()
	if err := p.advance(); err != nil {
		return nil, err
	}
	if ok, err := p.atCall("exists"); err != nil {
		return nil, err
	} else if ok {
		key, err := p.existsCall()
		if err != nil {
			return nil, err
		}
		return &protocol.FilterNode{Key: key, Cmp: CmpNex}, nil
	}
	operand, err := p.unary()
	if err != nil {
		return nil, err
	}
	return &protocol.FilterNode{Op: OpNot, Nodes: []*protocol.FilterNode{operand}}, nil
}

// atCall reports whether the current token is the identifier name followed by "(": a
// key may be called exists, all or any, and only the parenthesis tells them apart.
func (p *parser) atCall(name string) (bool, *SyntaxError) {
	if p.tok.kind != tokIdent || p.tok.text != name {
		return false, nil
	}
	next, err := p.peek()
	if err != nil {
		return false, err
	}
	return next.kind == tokLParen, nil
}

// primary = "(" expr ")" | "exists" "(" key ")" | ("all"|"any") "(" expr {"," expr} ")"
//
//	| comparison
func (p *parser) primary() (*protocol.FilterNode, *SyntaxError) {
	switch p.tok.kind {
	case tokLParen:
		return p.group()
	case tokIdent, tokString:
	default:
		return nil, p.unexpected(unaryStart...)
	}
	if ok, err := p.atCall("exists"); err != nil || ok {
		if err != nil {
			return nil, err
		}
		key, err := p.existsCall()
		if err != nil {
			return nil, err
		}
		return &protocol.FilterNode{Key: key, Cmp: CmpEx}, nil
	}
	for _, fn := range [...]struct{ name, op string }{{"all", OpAnd}, {"any", OpOr}} {
		if ok, err := p.atCall(fn.name); err != nil {
			return nil, err
		} else if ok {
			return p.listCall(fn.op)
		}
	}
	return p.comparison()
}

func (p *parser) group() (*protocol.FilterNode, *SyntaxError) {
	if err := p.nest(); err != nil {
		return nil, err
	}
	defer func() { p.nesting-- }()
	if err := p.advance(); err != nil {
		return nil, err
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokRParen {
		return nil, p.unexpected("&&", "||", ")")
	}
	return n, p.advance()
}

// existsCall reads `exists ( key )`, the current token being "exists".
func (p *parser) existsCall() (string, *SyntaxError) {
	if err := p.advance(); err != nil { // exists
		return "", err
	}
	if err := p.advance(); err != nil { // (
		return "", err
	}
	key, err := p.key()
	if err != nil {
		return "", err
	}
	if p.tok.kind != tokRParen {
		return "", p.unexpected(")")
	}
	return key, p.advance()
}

// listCall reads `all(e, ...)` or `any(e, ...)`, the spelling of an and/or node with
// a single child, which the infix operators cannot express.
func (p *parser) listCall(op string) (*protocol.FilterNode, *SyntaxError) {
	if err := p.nest(); err != nil {
		return nil, err
	}
	defer func() { p.nesting-- }()
	for range 2 { // the name and "("
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	n := &protocol.FilterNode{Op: op}
	for {
		kid, err := p.expr()
		if err != nil {
			return nil, err
		}
		n.Nodes = append(n.Nodes, kid)
		switch p.tok.kind {
		case tokComma:
			if err := p.advance(); err != nil {
				return nil, err
			}
		case tokRParen:
			return n, p.advance()
		default:
			return nil, p.unexpected("&&", "||", ",", ")")
		}
	}
}

// key = ident | string
func (p *parser) key() (string, *SyntaxError) {
	switch p.tok.kind {
	case tokIdent:
	case tokString:
		if p.tok.val == "" {
			return "", &SyntaxError{Pos: p.tok.pos, Msg: "empty key"}
		}
	default:
		return "", p.unexpected(expectKey)
	}
	key := p.tok.val
	return key, p.advance()
}
