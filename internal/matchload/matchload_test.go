package matchload

import (
	"strings"
	"testing"
)

// TestShares logs the shares the package comment gives, and checks that
// patterns are distinct and valid in shape.
func TestShares(t *testing.T) {
	pats := Patterns(100_000, 1)
	seen := map[string]bool{}
	var tokens, stars, rests, restPatterns int
	for _, p := range pats {
		if seen[p] {
			t.Fatalf("duplicate pattern %q", p)
		}
		seen[p] = true
		toks := strings.Split(p, ".")
		if len(toks) < 3 || len(toks) > Depth {
			t.Fatalf("pattern %q has %d tokens", p, len(toks))
		}
		for i, tok := range toks {
			tokens++
			switch tok {
			case "*":
				stars++
			case ">":
				if i != len(toks)-1 {
					t.Fatalf("pattern %q: '>' not last", p)
				}
				rests++
				restPatterns++
			}
		}
		if !strings.ContainsAny(p, "*>") {
			t.Fatalf("pattern %q has no wildcard", p)
		}
	}
	t.Logf("%d patterns: %.1f %% of tokens are '*', %.1f %% '>'; %.1f %% of patterns end with '>'",
		len(pats), 100*float64(stars)/float64(tokens), 100*float64(rests)/float64(tokens),
		100*float64(restPatterns)/float64(len(pats)))
	rests = 0
	for _, p := range pats[:1000] {
		if strings.HasSuffix(p, ">") {
			rests++
		}
	}
	t.Logf("first 1000 patterns: %.1f %% end with '>'", float64(rests)/10)
	if first := Patterns(1000, 1); strings.Join(first, " ") != strings.Join(pats[:1000], " ") {
		t.Fatal("Patterns(1000) is not a prefix of Patterns(100000) with the same seed")
	}
	for _, topic := range Topics(1000, pats, 2) {
		if n := strings.Count(topic, ".") + 1; n != Depth || strings.ContainsAny(topic, "*>") {
			t.Fatalf("topic %q", topic)
		}
	}
}
