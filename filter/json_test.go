package filter

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
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

func TestParseTreeJSON(t *testing.T) {
	cases := []struct {
		name, in string
		want     *protocol.FilterNode
		err      string
	}{
		{"leaf", `{"key":"a","cmp":"eq","val":"1"}`, leaf("a", CmpEq, "1"), ""},
		{"tree", ` {"op":"and","nodes":[{"key":"t","cmp":"in","vals":["x","y"]},{"key":"b","cmp":"nex"}]} `,
			branch(OpAnd, list("t", CmpIn, "x", "y"), leaf("b", CmpNex, "")), ""},
		{"unknown field", `{"key":"a","cmp":"ex","extra":[1,2]}`, leaf("a", CmpEx, ""), ""},
		{"null", `null`, nil, ""},
		{"escapes", `{"key":"\u00e9","cmp":"eq","val":"\"\n"}`, leaf("é", CmpEq, "\"\n"), ""},
		{"wrong type", `{"key":1}`, nil, "cannot unmarshal number"},
		{"not json", `{"key":`, nil, "unexpected EOF"},
		{"trailing data", `{"key":"a"} {}`, nil, "data after the tree"},
		{"empty", ``, nil, "EOF"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTreeJSON([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want ErrInvalid saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if got != nil {
					t.Fatalf("got %s, want nil", treeString(t, got))
				}
				return
			}
			if !got.EqualVT(tc.want) {
				t.Errorf("got %s, want %s", treeString(t, got), treeString(t, tc.want))
			}
		})
	}
}

func TestTreeJSONRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 23))
	for range 2000 {
		n := randomTree(rng, 4)
		js, err := TreeJSON(n)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseTreeJSON(js)
		if err != nil {
			t.Fatalf("ParseTreeJSON(%s): %v", js, err)
		}
		if !back.EqualVT(validUTF8(n)) {
			t.Fatalf("ParseTreeJSON(TreeJSON(t)) = %s, want %s", treeString(t, back), js)
		}
	}
}
