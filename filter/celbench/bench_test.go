package celbench

import (
	"strconv"
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/interpreter"
	"github.com/quagmt/udecimal"

	"github.com/gyrehq/gyre/filter"
)

// cases pairs each Gyre expression with the CEL expression that means the same over a
// map of tags: has() guards where Gyre treats a missing tag as false, double() where
// Gyre compares numbers (CEL has no decimal type, so this is float, not exact).
var cases = []struct {
	name, gyre, cel string
}{
	{"eq", `event_type == "goal"`, `has(tags.event_type) && tags.event_type == "goal"`},
	{
		"and3",
		`count > 42 && price >= 99.5 && ticker contains "GOO"`,
		`has(tags.count) && double(tags.count) > 42.0 && has(tags.price) && double(tags.price) >= 99.5 && has(tags.ticker) && tags.ticker.contains("GOO")`,
	},
}

var tags = map[string]string{
	"event_type": "goal",
	"count":      "43",
	"price":      "99.50",
	"ticker":     "GOOG",
	"source":     "NASDAQ",
}

var sink bool

func newEnv(tb testing.TB) *cel.Env {
	env, err := cel.NewEnv(cel.Variable("tags", cel.MapType(cel.StringType, cel.StringType)))
	if err != nil {
		tb.Fatal(err)
	}
	return env
}

func compileCEL(tb testing.TB, env *cel.Env, expr string) cel.Program {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		tb.Fatal(iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		tb.Fatal(err)
	}
	return prg
}

func compileGyre(tb testing.TB, expr string) *filter.Filter {
	n, err := filter.Parse(expr)
	if err != nil {
		tb.Fatal(err)
	}
	f, err := filter.Compile(n, filter.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// matchCEL is how a server would use a CEL filter: an evaluation error (a missing key
// slipping past has(), a value double() cannot read) means no match.
func matchCEL(prg cel.Program, act interpreter.Activation) bool {
	out, _, err := prg.Eval(act)
	if err != nil {
		return false
	}
	b, ok := out.Value().(bool)
	return ok && b
}

func activation(tb testing.TB, tags map[string]string) interpreter.Activation {
	act, err := interpreter.NewActivation(map[string]any{"tags": tags})
	if err != nil {
		tb.Fatal(err)
	}
	return act
}

// TestSameAnswers keeps the comparison fair: each CEL program must agree with its Gyre
// filter on publications that pass and that fail.
func TestSameAnswers(t *testing.T) {
	env := newEnv(t)
	samples := []map[string]string{
		tags,
		{},
		{"event_type": "shot", "count": "42", "price": "99.5", "ticker": "GOOG"},
		{"count": "42.5", "price": "100", "ticker": "AGOO"},
		{"count": "abc", "price": "100", "ticker": "GOO"},
	}
	for _, c := range cases {
		prg, f := compileCEL(t, env, c.cel), compileGyre(t, c.gyre)
		for i, s := range samples {
			if got, want := matchCEL(prg, activation(t, s)), f.Match(s); got != want {
				t.Errorf("%s sample %d %v: CEL %v, Gyre %v", c.name, i, s, got, want)
			}
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	env := newEnv(b)
	for _, c := range cases {
		b.Run("gyre/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				compileGyre(b, c.gyre)
			}
		})
		b.Run("cel/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				compileCEL(b, env, c.cel)
			}
		})
	}
}

// BenchmarkMatch evaluates one publication for 1 and 10,000 subscribers, each with its
// own compiled filter. The CEL activation is built once per publication, outside the
// timer, as a broadcast would share it.
func BenchmarkMatch(b *testing.B) {
	env := newEnv(b)
	act := activation(b, tags)
	for _, c := range cases {
		for _, subscribers := range []int{1, 10000} {
			gyre := make([]*filter.Filter, subscribers)
			progs := make([]cel.Program, subscribers)
			for i := range subscribers {
				gyre[i], progs[i] = compileGyre(b, c.gyre), compileCEL(b, env, c.cel)
			}
			suffix := c.name + "/subscribers=" + strconv.Itoa(subscribers)
			b.Run("gyre/"+suffix, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					for _, f := range gyre {
						sink = f.Match(tags)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*subscribers), "ns/match")
			})
			b.Run("cel/"+suffix, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					for _, p := range progs {
						sink = matchCEL(p, act)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*subscribers), "ns/match")
			})
		}
	}
}

// BenchmarkNumber compares reading a tag as a number and comparing it with a
// precompiled operand: Gyre's filter (n > 42, lookup included) against udecimal
// doing the same lookup, parse and comparison.
func BenchmarkNumber(b *testing.B) {
	f := compileGyre(b, `n > 42`)
	operand := udecimal.MustParse("42")
	for _, v := range []string{"43", "99.50", "-1.5e-3", "not a number", "123456789012345678901234567890123456789012.5"} {
		tags := map[string]string{"n": v}
		b.Run("gyre/"+v, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = f.Match(tags)
			}
		})
		b.Run("udecimal/"+v, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, ok := tags["n"]
				d, err := udecimal.Parse(s)
				sink = ok && err == nil && d.GreaterThan(operand)
			}
		})
	}
}
