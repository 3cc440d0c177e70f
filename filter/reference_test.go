package filter

import (
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/protocol"
)

// reference evaluates a protocol tree directly, the plainest reading of the semantics
// in the package documentation, with math/big doing the numbers. Match must agree
// with it on every tree Compile accepts.
func reference(n *protocol.FilterNode, tags map[string]string) bool {
	switch n.Op {
	case OpAnd:
		for _, kid := range n.Nodes {
			if !reference(kid, tags) {
				return false
			}
		}
		return true
	case OpOr:
		for _, kid := range n.Nodes {
			if reference(kid, tags) {
				return true
			}
		}
		return false
	case OpNot:
		return !reference(n.Nodes[0], tags)
	}
	v, ok := tags[n.Key]
	switch n.Cmp {
	case CmpEq:
		return ok && v == n.Val
	case CmpNeq:
		return !ok || v != n.Val
	case CmpIn:
		return slices.Contains(n.Vals, v)
	case CmpNin:
		return !slices.Contains(n.Vals, v)
	case CmpEx:
		return ok
	case CmpNex:
		return !ok
	case CmpSw:
		return ok && strings.HasPrefix(v, n.Val)
	case CmpEw:
		return ok && strings.HasSuffix(v, n.Val)
	case CmpCt:
		return ok && strings.Contains(v, n.Val)
	}
	c, numbers := referenceCmp(v, n.Val)
	if !ok || !numbers {
		return false
	}
	switch n.Cmp {
	case CmpGt:
		return c > 0
	case CmpGte:
		return c >= 0
	case CmpLt:
		return c < 0
	}
	return c <= 0
}

// referenceCmp compares two numbers with math/big. Exponents beyond ±9999 would make
// big.Rat build numbers of millions of digits; for those it trusts decimal.cmp, which
// TestDecimalCmp covers at such exponents.
func referenceCmp(a, b string) (int, bool) {
	da, aok := parseDecimal(a)
	db, bok := parseDecimal(b)
	if !aok || !bok {
		return 0, false
	}
	if hugeExponent(a) || hugeExponent(b) {
		return da.cmp(&db), true
	}
	return referenceNumber(a).Cmp(referenceNumber(b)), true
}

func hugeExponent(s string) bool {
	i := strings.IndexAny(s, "eE")
	return i >= 0 && len(strings.TrimLeft(strings.TrimLeft(s[i+1:], "+-"), "0")) > 4
}

// referenceNumber reads a number that parseDecimal accepts; big.Rat alone would also
// take fractions, hex and ".5".
func referenceNumber(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic("big.Rat cannot read " + s)
	}
	return r
}

func TestMatchAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 17))
	for range 20000 {
		tree := randomTree(rng, 5)
		f, err := Compile(tree, Unlimited)
		if err != nil {
			t.Fatal(err)
		}
		tags := randomTags(rng)
		if got, want := f.Match(tags), reference(tree, tags); got != want {
			t.Fatalf("%s on %q: Match = %v, reference = %v", Format(tree), tags, got, want)
		}
	}
}

func randomTags(rng *rand.Rand) map[string]string {
	tags := map[string]string{}
	for range rng.IntN(6) {
		tags[randomKeys[rng.IntN(len(randomKeys))]] = randomVals[rng.IntN(len(randomVals))]
	}
	return tags
}
