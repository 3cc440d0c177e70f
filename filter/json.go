package filter

import (
	"errors"

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
