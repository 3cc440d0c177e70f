package match

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// naiveMatch is the reference semantics: split both and compare token by
// token. It is what Index must agree with.
func naiveMatch(pattern, topic string) bool {
	p, t := strings.Split(pattern, "."), strings.Split(topic, ".")
	for i, tok := range p {
		if tok == ">" && i == len(p)-1 {
			return len(t) > i
		}
		if i >= len(t) || tok != "*" && tok != t[i] {
			return false
		}
	}
	return len(p) == len(t)
}

func TestValidPattern(t *testing.T) {
	tests := []struct {
		pattern string
		why     string // "" when valid; else a part of the error
	}{
		{"*", ""},
		{">", ""},
		{"a.*", ""},
		{"a.>", ""},
		{"*.*", ""},
		{"*.>", ""},
		{"a.*.c", ""},
		{"a.b.c.>", ""},
		{"é.~.-_ x.*", ""},
		{"", "empty"},
		{"a", "no wildcard"},
		{"a.b", "no wildcard"},
		{".", "token 1 is empty"},
		{".*", "token 1 is empty"},
		{"*.", "token 2 is empty"},
		{"a..*", "token 2 is empty"},
		{">.a", "'>' is not the last token"},
		{"a.>.b", "'>' is not the last token"},
		{"a.>.>", "'>' is not the last token"},
		{"a*", "mixes a wildcard"},
		{"a.*b", "mixes a wildcard"},
		{"a.b>", "mixes a wildcard"},
		{"**", "mixes a wildcard"},
		{">>", "mixes a wildcard"},
		{"a.*>", "mixes a wildcard"},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			err := ValidPattern(tt.pattern)
			if tt.why == "" {
				if err != nil {
					t.Fatalf("ValidPattern(%q) = %v, want nil", tt.pattern, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidPattern) || !strings.Contains(err.Error(), tt.why) {
				t.Fatalf("ValidPattern(%q) = %v, want an ErrInvalidPattern saying %q", tt.pattern, err, tt.why)
			}
			var x Index[int]
			if err := x.Set(tt.pattern, 1); !errors.Is(err, ErrInvalidPattern) || x.Len() != 0 {
				t.Fatalf("Set(%q) = %v with Len %d, want ErrInvalidPattern and nothing added", tt.pattern, err, x.Len())
			}
		})
	}
}

func TestIsPattern(t *testing.T) {
	for s, want := range map[string]bool{
		"":        false,
		"a.b":     false,
		"a.*":     true,
		"a*":      true,
		"a>b":     true,
		">":       true,
		"ns:room": false,
	} {
		if got := IsPattern(s); got != want {
			t.Errorf("IsPattern(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestMatchSemantics(t *testing.T) {
	tests := []struct {
		pattern, topic string
		want           bool
	}{
		{"a.>", "a", false}, // '>' needs at least one token
		{"a.>", "a.b", true},
		{"a.>", "a.b.c", true},
		{">", "a", true},
		{">", "a.b", true},
		{">", "", true}, // "" is one empty token
		{"*", "", true},
		{"a.*", "a.", true}, // '*' matches the empty token
		{"a.*", "a", false},
		{"a.*", "a.b.c", false}, // '*' does not span dots
		{"*.c", "a.b.c", false},
		{"a.*.c", "a.b.c", true},
		{"a.*.c", "a.b.c.d", false},
		{"a.b.*", "a.b", false}, // equal prefix, longer pattern
		{"a.b.*.>", "a.b.c", false},
		{"a.b.*.>", "a.b.c.d", true},
		{"*.b", "a.b", true},
		{"a.*", "b.x", false},
		{"ab.*", "a.x", false}, // a token is compared whole
		{"a.*", "ab.x", false},
		{"a.*", "a.*", true}, // '*' in a topic is a character
		{"a.*.c", "a.>.c", true},
		{"a.>", "a.>", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.topic, func(t *testing.T) {
			if got := naiveMatch(tt.pattern, tt.topic); got != tt.want {
				t.Fatalf("naiveMatch = %v, want %v", got, tt.want)
			}
			var x Index[string]
			mustSet(t, &x, tt.pattern, tt.pattern)
			got := x.AppendMatches(nil, tt.topic)
			if want := tt.want; (len(got) == 1) != want || len(got) > 1 {
				t.Fatalf("Match(%q) with %q = %q, want match %v", tt.topic, tt.pattern, got, want)
			}
		})
	}
}

func mustSet[V any](t testing.TB, x *Index[V], pattern string, v V) {
	t.Helper()
	if err := x.Set(pattern, v); err != nil {
		t.Fatal(err)
	}
}

func sortedMatches(x *Index[string], topic string) []string {
	got := x.AppendMatches(nil, topic)
	slices.Sort(got)
	return got
}

func TestIndex(t *testing.T) {
	var x Index[string]
	for _, p := range []string{"a.>", "a.*", "*.b", "a.*.c", ">", "b.*"} {
		mustSet(t, &x, p, p)
	}
	if x.Len() != 6 {
		t.Fatalf("Len = %d, want 6", x.Len())
	}
	check := func(topic string, want ...string) {
		t.Helper()
		if got := sortedMatches(&x, topic); !slices.Equal(got, want) {
			t.Errorf("Match(%q) = %q, want %q", topic, got, want)
		}
	}
	// Each matching pattern once, though "a.b" reaches the node of "a" by
	// both "a" and ">".
	check("a.b", "*.b", ">", "a.*", "a.>")
	check("a.b.c", ">", "a.*.c", "a.>")
	check("c", ">")

	t.Run("replace", func(t *testing.T) {
		mustSet(t, &x, "a.*", "new a.*")
		if x.Len() != 6 {
			t.Fatalf("Len after a replacing Set = %d, want 6", x.Len())
		}
		if v, ok := x.Get("a.*"); !ok || v != "new a.*" {
			t.Fatalf("Get = %q, %v", v, ok)
		}
		check("a.x", ">", "a.>", "new a.*")
	})
	t.Run("delete", func(t *testing.T) {
		if !x.Delete("a.>") || x.Delete("a.>") {
			t.Fatal("Delete of a present pattern must report true once")
		}
		if x.Len() != 5 {
			t.Fatalf("Len = %d, want 5", x.Len())
		}
		check("a.b", "*.b", ">", "new a.*")
		check("a.b.c", ">", "a.*.c")
		if _, ok := x.Get("a.>"); ok {
			t.Fatal("Get finds a deleted pattern")
		}
	})
	t.Run("absent", func(t *testing.T) {
		for _, p := range []string{"a.b.>", "*", "a.*.*", "a", "a.b", "", "a.>.c", "x.*", "a..*"} {
			if _, ok := x.Get(p); ok {
				t.Errorf("Get(%q) found a pattern never set", p)
			}
			if x.Delete(p) {
				t.Errorf("Delete(%q) removed a pattern never set", p)
			}
		}
		if x.Len() != 5 {
			t.Fatalf("Len = %d, want 5", x.Len())
		}
	})
	t.Run("stop", func(t *testing.T) {
		calls := 0
		x.Match("a.b", func(string) bool { calls++; return false })
		if calls != 1 {
			t.Fatalf("fn called %d times after returning false, want 1", calls)
		}
	})
	t.Run("delete all", func(t *testing.T) {
		for _, p := range []string{"a.*", "*.b", "a.*.c", ">", "b.*"} {
			if !x.Delete(p) {
				t.Fatalf("Delete(%q) = false", p)
			}
		}
		if x.Len() != 0 || !x.root.empty() {
			t.Fatalf("Len = %d, root empty %v: want an empty index", x.Len(), x.root.empty())
		}
	})
}

// countNodes returns the nodes under n, n included, and the table slots they
// hold.
func countNodes[V any](n *node[V]) (nodes, slots int) {
	nodes = 1
	if c := n.star.Load(); c != nil {
		cn, cs := countNodes(c)
		nodes, slots = nodes+cn, slots+cs
	}
	if t := n.kids.Load(); t != nil {
		slots += len(t.slots)
		for i := range t.slots {
			if c := t.slots[i].node.Load(); c != nil && c.token != "." {
				cn, cs := countNodes(c)
				nodes, slots = nodes+cn, slots+cs
			}
		}
	}
	return nodes, slots
}

// TestPrune checks that churn leaves no trace: nodes and tables emptied by
// Delete go, and tables shrink back.
func TestPrune(t *testing.T) {
	var x Index[int]
	mustSet(t, &x, "keep.*", 0)
	baseNodes, baseSlots := countNodes(&x.root)
	for round := range 3 {
		for i := range 1000 {
			mustSet(t, &x, fmt.Sprintf("keep.%d.*.x%d.>", i, round), i)
			mustSet(t, &x, fmt.Sprintf("*.%d", i), i)
		}
		for i := range 1000 {
			if !x.Delete(fmt.Sprintf("keep.%d.*.x%d.>", i, round)) || !x.Delete(fmt.Sprintf("*.%d", i)) {
				t.Fatalf("round %d: Delete of pattern %d failed", round, i)
			}
		}
		if nodes, slots := countNodes(&x.root); nodes != baseNodes || slots != baseSlots || x.Len() != 1 {
			t.Fatalf("round %d: %d nodes, %d slots, Len %d; want %d, %d, 1", round, nodes, slots, x.Len(), baseNodes, baseSlots)
		}
	}
}

// TestAgainstNaive holds the index against naiveMatch over thousands of
// random patterns and topics, before and after deleting a random part of the
// patterns. The small vocabulary makes many patterns share prefixes and many
// topics match.
func TestAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "b", "c", "dd"}
	randToken := func(wild bool) string {
		if wild && rng.IntN(4) == 0 {
			return "*"
		}
		if !wild && rng.IntN(20) == 0 {
			return "" // topics may have empty tokens
		}
		return words[rng.IntN(len(words))]
	}
	randName := func(wild bool) string {
		toks := make([]string, 1+rng.IntN(5))
		for i := range toks {
			toks[i] = randToken(wild)
		}
		if wild && rng.IntN(5) == 0 {
			toks[len(toks)-1] = ">"
		}
		return strings.Join(toks, ".")
	}

	var x Index[string]
	live := map[string]bool{}
	for len(live) < 2000 {
		p := randName(true)
		if ValidPattern(p) == nil {
			mustSet(t, &x, p, p)
			live[p] = true
		}
	}
	topics := make([]string, 1000)
	for i := range topics {
		topics[i] = randName(false)
	}
	compare := func(stage string) {
		t.Helper()
		matched := 0
		for _, topic := range topics {
			var want []string
			for p := range live {
				if naiveMatch(p, topic) {
					want = append(want, p)
				}
			}
			slices.Sort(want)
			if got := sortedMatches(&x, topic); !slices.Equal(got, want) {
				t.Fatalf("%s: Match(%q) = %q, want %q", stage, topic, got, want)
			}
			if len(want) > 0 {
				matched++
			}
		}
		if x.Len() != len(live) {
			t.Fatalf("%s: Len = %d, want %d", stage, x.Len(), len(live))
		}
		t.Logf("%s: %d patterns, %d of %d topics match", stage, len(live), matched, len(topics))
	}
	compare("full")
	for p := range live {
		if rng.IntN(3) > 0 {
			if !x.Delete(p) {
				t.Fatalf("Delete(%q) = false", p)
			}
			delete(live, p)
		}
	}
	compare("after deletes")
}
