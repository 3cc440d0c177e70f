package filter

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/gyrehq/gyre/protocol"
)

func TestTreeJSON(t *testing.T) {
	cases := []struct {
		expr string
		want string
	}{
		{`a == "1"`, `{"key":"a","cmp":"eq","val":"1"}`},
		{`exists(b)`, `{"key":"b","cmp":"ex"}`},
		{`a == ""`, `{"key":"a","cmp":"eq"}`},
		{`t in ("x", "")`, `{"key":"t","cmp":"in","vals":["x",""]}`},
		{`a == "1" && !exists(b)`, `{"op":"and","nodes":[{"key":"a","cmp":"eq","val":"1"},{"key":"b","cmp":"nex"}]}`},
		{`!(a == "\"<&>\n")`, `{"op":"not","nodes":[{"key":"a","cmp":"eq","val":"\"<&>\n"}]}`},
		{`"é" != "☃"`, `{"key":"é","cmp":"neq","val":"☃"}`},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := TreeJSON(mustParse(t, tc.expr))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("TreeJSON = %s\nwant       %s", got, tc.want)
			}
		})
	}
	if _, err := TreeJSON(branch(OpAnd, nil)); err == nil {
		t.Error("TreeJSON accepted a nil node")
	}
}

// TestTreeJSONIsTheWireShape checks TreeJSON against the protocol's own JSON codec,
// both ways, on random trees: what `gyre filter` prints is what a client sends.
func TestTreeJSONIsTheWireShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 2000 {
		n := randomTree(rng, 4)
		js, err := TreeJSON(n)
		if err != nil {
			t.Fatal(err)
		}
		cmd := &protocol.Command{Id: 1, Subscribe: &protocol.SubscribeRequest{Channel: "c", Tf: n}}
		wire, err := protocol.EncodeCommand(protocol.TypeJSON, cmd)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(wire, append([]byte(`"tf":`), js...)) {
			t.Fatalf("protocol encodes %s\nTreeJSON gives %s", wire, js)
		}
		frame := append(append([]byte(`{"id":1,"subscribe":{"channel":"c","tf":`), js...), "}}"...)
		back, err := protocol.DecodeCommand(protocol.TypeJSON, frame)
		if err != nil {
			t.Fatalf("protocol cannot decode %s: %v", frame, err)
		}
		if !sameUTF8Tree(back.Subscribe.Tf, n) {
			t.Fatalf("decoded %s\nfrom      %s", treeString(t, back.Subscribe.Tf), js)
		}
	}
}

// sameUTF8Tree compares trees as JSON carries them: JSON holds no invalid UTF-8, so
// each invalid byte of b is first replaced by U+FFFD.
func sameUTF8Tree(a, b *protocol.FilterNode) bool {
	return a.EqualVT(validUTF8(b))
}

func validUTF8(n *protocol.FilterNode) *protocol.FilterNode {
	return rebuild(n, func(s string) string { return string([]rune(s)) })
}

// rebuild copies a tree through fix, leaving behind what only protobuf keeps (unknown
// fields), so that trees compare by what they say.
func rebuild(n *protocol.FilterNode, fix func(string) string) *protocol.FilterNode {
	out := &protocol.FilterNode{Op: fix(n.Op), Key: fix(n.Key), Cmp: fix(n.Cmp), Val: fix(n.Val)}
	for _, v := range n.Vals {
		out.Vals = append(out.Vals, fix(v))
	}
	for _, kid := range n.Nodes {
		out.Nodes = append(out.Nodes, rebuild(kid, fix))
	}
	return out
}
