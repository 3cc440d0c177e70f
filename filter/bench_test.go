package filter

import (
	"strconv"
	"testing"
)

// The two expressions the CEL baseline in filter/celbench also measures, and the tags
// of a publication that passes both (so the second one runs all three comparisons).
var benchCases = []struct {
	name string
	expr string
}{
	{"eq", `event_type == "goal"`},
	{"and3", `count > 42 && price >= 99.5 && ticker contains "GOO"`},
	{"in20", `ticker in ("T0", "T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8", "T9", "T10", "T11", "T12", "T13", "T14", "T15", "T16", "T17", "T18", "GOOG")`},
}

var benchTags = map[string]string{
	"event_type": "goal",
	"count":      "43",
	"price":      "99.50",
	"ticker":     "GOOG",
	"source":     "NASDAQ",
}

var sink bool

func BenchmarkParse(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(bc.expr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	for _, bc := range benchCases {
		tree := mustParse(b, bc.expr)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compile(tree, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMatch evaluates one publication against the filters of 1 and of 10,000
// subscribers, each with its own compiled filter, as a broadcast does.
func BenchmarkMatch(b *testing.B) {
	for _, bc := range benchCases {
		tree := mustParse(b, bc.expr)
		for _, subscribers := range []int{1, 10000} {
			filters := make([]*Filter, subscribers)
			for i := range filters {
				filters[i] = mustCompile(b, tree)
			}
			if !filters[0].Match(benchTags) {
				b.Fatalf("%s does not match the benchmark tags", bc.expr)
			}
			b.Run(bc.name+"/subscribers="+strconv.Itoa(subscribers), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					for _, f := range filters {
						sink = f.Match(benchTags)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*subscribers), "ns/match")
			})
		}
	}
}

func BenchmarkParseDecimal(b *testing.B) {
	for _, s := range []string{"43", "99.50", "-1.5e-3", "not a number", "123456789012345678901234567890.5"} {
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, sink = parseDecimal(s)
			}
		})
	}
}
