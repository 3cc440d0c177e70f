package filter

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/protocol"
)

func TestFormat(t *testing.T) {
	a, b, c := leaf("a", CmpEq, "1"), leaf("b", CmpEq, "2"), leaf("c", CmpEq, "3")
	cases := []struct {
		name string
		node *protocol.FilterNode
		want string
	}{
		{"eq", a, `a == "1"`},
		{"numbers bare", leaf("n", CmpGt, "-1.5e3"), `n > -1.5e3`},
		{"non-number quoted", leaf("n", CmpGte, "abc"), `n >= "abc"`},
		{"plus sign quoted", leaf("n", CmpLt, "+5"), `n < "+5"`},
		{"numeric equality", branch(OpAnd, leaf("n", CmpGte, "4"), leaf("n", CmpLte, "4")), `n == 4`},
		{"numeric inequality", branch(OpOr, leaf("n", CmpLt, "4"), leaf("n", CmpGt, "4")), `n != 4`},
		{"bounds of a non-number", branch(OpAnd, leaf("n", CmpGte, "x"), leaf("n", CmpLte, "x")), `n >= "x" && n <= "x"`},
		{"bounds reversed", branch(OpAnd, leaf("n", CmpLte, "4"), leaf("n", CmpGte, "4")), `n <= 4 && n >= 4`},
		{"bounds of two keys", branch(OpAnd, leaf("n", CmpGte, "4"), leaf("m", CmpLte, "4")), `n >= 4 && m <= 4`},
		{"and", branch(OpAnd, a, b, c), `a == "1" && b == "2" && c == "3"`},
		{"or in and", branch(OpAnd, branch(OpOr, a, b), c), `(a == "1" || b == "2") && c == "3"`},
		{"and in or", branch(OpOr, branch(OpAnd, a, b), c), `a == "1" && b == "2" || c == "3"`},
		{"and in and", branch(OpAnd, branch(OpAnd, a, b), c), `(a == "1" && b == "2") && c == "3"`},
		{"or in or", branch(OpOr, a, branch(OpOr, b, c)), `a == "1" || (b == "2" || c == "3")`},
		{"not leaf", branch(OpNot, a), `!(a == "1")`},
		{"not and", branch(OpNot, branch(OpAnd, a, b)), `!(a == "1" && b == "2")`},
		{"not not", branch(OpNot, branch(OpNot, a)), `!!(a == "1")`},
		{"not ex", branch(OpNot, leaf("k", CmpEx, "")), `!(exists(k))`},
		{"not nex", branch(OpNot, leaf("k", CmpNex, "")), `!!exists(k)`},
		{"not all", branch(OpNot, branch(OpAnd, a)), `!all(a == "1")`},
		{"not numeric equality", branch(OpNot, branch(OpAnd, leaf("n", CmpGte, "4"), leaf("n", CmpLte, "4"))), `!(n == 4)`},
		{"single and", branch(OpAnd, branch(OpOr, a, b)), `all(a == "1" || b == "2")`},
		{"single or", branch(OpOr, a), `any(a == "1")`},
		{"lists", branch(OpAnd, list("t", CmpIn, "x", "y"), list("t", CmpNin, "z")), `t in ("x", "y") && t not in ("z")`},
		{"words", branch(OpOr, leaf("t", CmpSw, "a"), leaf("t", CmpEw, "b"), leaf("t", CmpCt, "c")), `t startswith "a" || t endswith "b" || t contains "c"`},
		{"quoted keys", leaf("my key", CmpEq, "v"), `"my key" == "v"`},
		{"digit key", leaf("2fa", CmpEx, ""), `exists("2fa")`},
		{"keyword key", list("in", CmpNin, "x"), `in not in ("x")`},
		{"escapes", leaf("a", CmpEq, "\"\\\n\t\x00\xff☃"), `a == "\"\\\n\t\x00\xff☃"`},
		{"invalid cmp", leaf("a", "zz", "1"), `<invalid cmp "zz">`},
		{"invalid op", branch("xor", a), `<invalid op "xor" with 1 nodes>`},
		{"nil", nil, `<invalid nil node>`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Format(tc.node); got != tc.want {
				t.Errorf("Format = %s\nwant     %s", got, tc.want)
			}
		})
	}
}

// TestRoundTrip checks Parse(Format(t)) == t on random valid trees, the property that
// lets any tree a client sends be shown as an expression and read back.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for range n {
		tree := randomTree(rng, 5)
		if _, err := Compile(tree, Unlimited); err != nil {
			t.Fatalf("generator made an invalid tree %s: %v", treeString(t, tree), err)
		}
		checkRoundTrip(t, tree)
	}
}

func checkRoundTrip(t *testing.T, tree *protocol.FilterNode) {
	t.Helper()
	expr := Format(tree)
	back, err := Parse(expr)
	if err != nil {
		t.Fatalf("Parse(Format(%s)) = %v\nexpression: %s", treeString(t, tree), err, expr)
	}
	if !back.EqualVT(tree) {
		t.Fatalf("round trip changed the tree\nexpression: %s\nbefore: %s\nafter:  %s", expr, treeString(t, tree), treeString(t, back))
	}
	if again := Format(back); again != expr {
		t.Fatalf("Format is not stable: %s then %s", expr, again)
	}
}

var (
	randomKeys = []string{"a", "ticker", "x.y-z_1", "città", "in", "not", "exists", "all", "any",
		"contains", "_", "2fa", "my key", "a\"b", "\xff", "日本", "-x", "a,b"}
	randomVals = []string{"", "1", "-1.5e3", "0.8", "abc", "+5", ".5", "1e", "\n", "\"\\", "\x00\x7f\xfe",
		"☃", "a b", "42", "-0", "1E+2"}
	randomCmps = []string{CmpEq, CmpNeq, CmpIn, CmpNin, CmpEx, CmpNex, CmpSw, CmpEw, CmpCt, CmpGt, CmpGte, CmpLt, CmpLte}
)

func randomTree(rng *rand.Rand, depth int) *protocol.FilterNode {
	if depth <= 1 || rng.IntN(3) == 0 {
		return randomLeaf(rng)
	}
	switch rng.IntN(5) {
	case 0:
		return branch(OpNot, randomTree(rng, depth-1))
	case 1: // the shape Parse gives a numeric == or !=
		key, val := randomKeys[rng.IntN(len(randomKeys))], []string{"1", "-2.5", "3e4", "x"}[rng.IntN(4)]
		if rng.IntN(2) == 0 {
			return branch(OpAnd, leaf(key, CmpGte, val), leaf(key, CmpLte, val))
		}
		return branch(OpOr, leaf(key, CmpLt, val), leaf(key, CmpGt, val))
	}
	n := branch([]string{OpAnd, OpOr}[rng.IntN(2)])
	for range 1 + rng.IntN(4) {
		n.Nodes = append(n.Nodes, randomTree(rng, depth-1))
	}
	return n
}

func randomLeaf(rng *rand.Rand) *protocol.FilterNode {
	n := &protocol.FilterNode{Key: randomKeys[rng.IntN(len(randomKeys))], Cmp: randomCmps[rng.IntN(len(randomCmps))]}
	switch n.Cmp {
	case CmpEx, CmpNex:
	case CmpIn, CmpNin:
		count := 1 + rng.IntN(3)
		if rng.IntN(4) == 0 {
			count = setThreshold + rng.IntN(4) // long enough for a set
		}
		for range count {
			n.Vals = append(n.Vals, randomVals[rng.IntN(len(randomVals))])
		}
	case CmpGt, CmpGte, CmpLt, CmpLte:
		for n.Val == "" {
			n.Val = randomVals[rng.IntN(len(randomVals))]
		}
	default:
		n.Val = randomVals[rng.IntN(len(randomVals))]
	}
	return n
}

func TestFormatCanonical(t *testing.T) {
	cases := []struct{ in, want string }{
		{`((a=="1"))`, `a == "1"`},
		{"a  ==\n\"1\"||b>1.50", `a == "1" || b > 1.50`},
		{`any(a == "1", b == "2")`, `a == "1" || b == "2"`},
		{`!a == "1"`, `!(a == "1")`},
		{`"ticker" == "\u0041"`, `ticker == "A"`},
		{`a == 1`, `a == 1`},
		{`a >= "1"`, `a >= 1`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			if got := Format(mustParse(t, tc.in)); got != tc.want {
				t.Errorf("Format(Parse) = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestFormatLongTree(t *testing.T) {
	n := wide(500)
	checkRoundTrip(t, n)
	if got := strings.Count(Format(n), "||"); got != 499 {
		t.Errorf("%d operators, want 499", got)
	}
}
