package filter

import (
	"testing"

	"github.com/gyrehq/gyre/protocol"
)

var fuzzExpressions = []string{
	`event_type == "goal" || (event_type == "shot" && xG >= 0.8)`,
	`ticker in ("GOOG", "AAPL")`,
	`ticker not in ("GOOG") && !exists(region)`,
	`!(a == "1") || all(b startswith "x") || any(c endswith "y", d contains "z")`,
	`count > 42 && price <= 99.5 && x == 1 && y != -2.5e-3`,
	`"my key" == "\u00e9\x00\n" && !!exists(k) && !(exists(k))`,
	"a ==\n\"1\"",
	`((a == "1"`, `a in (1)`, `a == "\q"`, `a = 1`,
}

// FuzzParse checks that Parse never panics, that what it accepts compiles, and that
// Format writes it back to the same tree.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzExpressions {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		n, err := Parse(expr)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("error %T is not a *SyntaxError", err)
			}
			_ = err.Error()
			return
		}
		if _, err := Compile(n, Unlimited); err != nil {
			t.Fatalf("Parse(%q) gave a tree Compile refuses: %v", expr, err)
		}
		checkRoundTrip(t, n)
	})
}

// FuzzMatch builds arbitrary trees from protobuf bytes and checks that every tree
// Compile accepts evaluates without panicking and as the reference does.
func FuzzMatch(f *testing.F) {
	for _, s := range fuzzExpressions {
		if n, err := Parse(s); err == nil {
			b, err := n.MarshalVT()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, "a", "1", "count", "43.0")
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, k1, v1, k2, v2 string) {
		n := &protocol.FilterNode{}
		if err := n.UnmarshalVT(data); err != nil {
			return
		}
		flt, err := Compile(n, Limits{})
		if err != nil {
			return
		}
		tags := map[string]string{k1: v1, k2: v2}
		if got, want := flt.Match(tags), reference(n, tags); got != want {
			t.Fatalf("%s on %q: Match = %v, reference = %v", Format(n), tags, got, want)
		}
		checkRoundTrip(t, rebuild(n, func(s string) string { return s }))
	})
}
