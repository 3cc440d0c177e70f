package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gyrehq/gyre/protocol"
)

// TreeJSON writes a tree in the protocol's JSON shape, the "tf" of a subscribe
// request: fields in protocol order, zero values left out, for example
//
//	{"op":"and","nodes":[{"key":"a","cmp":"eq","val":"1"},{"key":"b","cmp":"ex"}]}
//
// It does not validate the tree; it fails only on a nil node.
func TreeJSON(n *protocol.FilterNode) ([]byte, error) {
	return appendTreeJSON(nil, n)
}

func appendTreeJSON(b []byte, n *protocol.FilterNode) ([]byte, error) {
	if n == nil {
		return nil, errors.New("filter: nil node in tree")
	}
	b = append(b, '{')
	first := true
	field := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
	}
	for _, f := range [...]struct{ name, val string }{{"op", n.Op}, {"key", n.Key}, {"cmp", n.Cmp}, {"val", n.Val}} {
		if f.val != "" {
			field(f.name)
			b = protocol.AppendJSONString(b, f.val)
		}
	}
	if len(n.Vals) > 0 {
		field("vals")
		for i, v := range n.Vals {
			b = appendListSep(b, i)
			b = protocol.AppendJSONString(b, v)
		}
		b = append(b, ']')
	}
	if len(n.Nodes) > 0 {
		field("nodes")
		for i, kid := range n.Nodes {
			b = appendListSep(b, i)
			var err error
			if b, err = appendTreeJSON(b, kid); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// appendListSep opens a JSON array before its first element and separates the others.
func appendListSep(b []byte, i int) []byte {
	if i == 0 {
		return append(b, '[')
	}
	return append(b, ',')
}

// jsonNode mirrors protocol.FilterNode for encoding/json.
type jsonNode struct {
	Op    string      `json:"op"`
	Key   string      `json:"key"`
	Cmp   string      `json:"cmp"`
	Val   string      `json:"val"`
	Vals  []string    `json:"vals"`
	Nodes []*jsonNode `json:"nodes"`
}

// ParseTreeJSON reads a tree in the protocol's JSON shape, as [TreeJSON] writes it and
// as it appears outside the client protocol (a claim of a token, a proxy's answer, a
// configuration file). Unknown fields are ignored; null stands for an absent node. It
// checks only the JSON: [Compile] checks the tree. Errors wrap [ErrInvalid].
func ParseTreeJSON(data []byte) (*protocol.FilterNode, error) {
	var n *jsonNode
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(&n); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if d.More() {
		return nil, fmt.Errorf("%w: data after the tree", ErrInvalid)
	}
	return n.node(), nil
}

func (n *jsonNode) node() *protocol.FilterNode {
	if n == nil {
		return nil
	}
	out := &protocol.FilterNode{Op: n.Op, Key: n.Key, Cmp: n.Cmp, Val: n.Val, Vals: n.Vals}
	for _, kid := range n.Nodes {
		out.Nodes = append(out.Nodes, kid.node())
	}
	return out
}
