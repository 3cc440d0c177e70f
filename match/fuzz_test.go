package match

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzMatch checks that Set accepts exactly what ValidPattern accepts, and
// that Match agrees with naiveMatch for the fuzzed pattern among patterns
// made from the topic itself (so that most topics match something), before
// and after the fuzzed pattern is deleted.
func FuzzMatch(f *testing.F) {
	for _, seed := range [][2]string{
		{"a.*", "a.b"},
		{"a.>", "a"},
		{">", ""},
		{"*.*", "a."},
		{"a.*.c", "a.b.c.d"},
		{"a..*", "a..b"},
		{"a.>.b", "a.x.b"},
		{"a*", "a*"},
		{"eu.*.bus.>", "eu.paris.bus.42.pos"},
		{"*", "*"},
		{"a.b", "a.b"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, topic string) {
		if !IsPattern(pattern) && ValidPattern(pattern) == nil {
			t.Fatalf("ValidPattern(%q) accepts a name without wildcards", pattern)
		}
		var x Index[string]
		for _, p := range patternsFor(topic) {
			mustSet(t, &x, p, p)
		}
		err := x.Set(pattern, pattern)
		if valid := ValidPattern(pattern) == nil; valid != (err == nil) {
			t.Fatalf("ValidPattern(%q) valid=%v but Set returned %v", pattern, valid, err)
		}
		if err != nil && !errors.Is(err, ErrInvalidPattern) {
			t.Fatalf("Set(%q) = %v, not an ErrInvalidPattern", pattern, err)
		}
		check := func(stage string) {
			var want []string
			for _, p := range append(patternsFor(topic), pattern) {
				if _, ok := x.Get(p); ok && naiveMatch(p, topic) && !slices.Contains(want, p) {
					want = append(want, p)
				}
			}
			slices.Sort(want)
			if got := sortedMatches(&x, topic); !slices.Equal(got, want) {
				t.Fatalf("%s: Match(%q) = %q, want %q", stage, topic, got, want)
			}
		}
		check("set")
		if v, ok := x.Get(pattern); ok != (err == nil) || ok && v != pattern {
			t.Fatalf("Get(%q) = %q, %v after Set returned %v", pattern, v, ok, err)
		}
		if deleted := x.Delete(pattern); deleted != (err == nil) {
			t.Fatalf("Delete(%q) = %v after Set returned %v", pattern, deleted, err)
		}
		check("deleted")
	})
}

// patternsFor returns valid patterns that match topic: each token in turn
// replaced by "*", and each proper prefix followed by ">". Some are left out
// when the topic has tokens no pattern may hold.
func patternsFor(topic string) []string {
	toks := strings.Split(topic, ".")
	if len(toks) > 8 {
		toks = toks[:8]
	}
	var out []string
	for i := range toks {
		star := slices.Clone(toks)
		star[i] = "*"
		rest := append(slices.Clone(toks[:i+1]), ">")
		for _, p := range []string{strings.Join(star, "."), strings.Join(rest, ".")} {
			if ValidPattern(p) == nil {
				out = append(out, p)
			}
		}
	}
	return out
}
