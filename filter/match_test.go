package filter

import (
	"strconv"
	"testing"

	"github.com/gyrehq/gyre/protocol"
)

// tags is the publication most cases run against.
var tags = map[string]string{
	"ticker": "AAPL",
	"source": "NASDAQ",
	"price":  "150.25",
	"volume": "1000",
	"empty":  "",
	"word":   "abc",
	"città":  "Zürich ☃",
	"xG":     "0.80",
}

func TestMatchComparisons(t *testing.T) {
	cases := []struct {
		name string
		node *protocol.FilterNode
		want bool
	}{
		{"eq", leaf("ticker", CmpEq, "AAPL"), true},
		{"eq/other", leaf("ticker", CmpEq, "MSFT"), false},
		{"eq/case", leaf("ticker", CmpEq, "aapl"), false},
		{"eq/missing", leaf("nope", CmpEq, "AAPL"), false},
		{"eq/empty value", leaf("empty", CmpEq, ""), true},
		{"eq/empty val missing", leaf("nope", CmpEq, ""), false},
		{"eq/unicode", leaf("città", CmpEq, "Zürich ☃"), true},
		{"eq/text not number", leaf("xG", CmpEq, "0.8"), false},
		{"neq", leaf("source", CmpNeq, "TEST"), true},
		{"neq/same", leaf("source", CmpNeq, "NASDAQ"), false},
		{"neq/missing", leaf("nope", CmpNeq, "x"), true},
		{"neq/empty", leaf("empty", CmpNeq, ""), false},
		{"in", list("ticker", CmpIn, "MSFT", "AAPL"), true},
		{"in/none", list("ticker", CmpIn, "MSFT", "GOOG"), false},
		{"in/missing", list("nope", CmpIn, "MSFT"), false},
		{"in/missing reads empty", list("nope", CmpIn, "MSFT", ""), true},
		{"in/empty value", list("empty", CmpIn, ""), true},
		{"in/set", list("ticker", CmpIn, manyValues("T", 20, "AAPL")...), true},
		{"in/set none", list("ticker", CmpIn, manyValues("T", 20)...), false},
		{"in/set missing reads empty", list("nope", CmpIn, manyValues("T", 20, "")...), true},
		{"nin", list("ticker", CmpNin, "MSFT", "GOOG"), true},
		{"nin/listed", list("ticker", CmpNin, "AAPL"), false},
		{"nin/missing", list("nope", CmpNin, "MSFT"), true},
		{"nin/missing reads empty", list("nope", CmpNin, "x", ""), false},
		{"nin/set", list("ticker", CmpNin, manyValues("T", 20)...), true},
		{"nin/set listed", list("ticker", CmpNin, manyValues("T", 20, "AAPL")...), false},
		{"ex", leaf("price", CmpEx, ""), true},
		{"ex/empty value", leaf("empty", CmpEx, ""), true},
		{"ex/missing", leaf("nope", CmpEx, ""), false},
		{"nex", leaf("nope", CmpNex, ""), true},
		{"nex/present", leaf("empty", CmpNex, ""), false},
		{"sw", leaf("ticker", CmpSw, "AA"), true},
		{"sw/whole", leaf("ticker", CmpSw, "AAPL"), true},
		{"sw/longer", leaf("ticker", CmpSw, "AAPLE"), false},
		{"sw/empty val", leaf("empty", CmpSw, ""), true},
		{"sw/missing", leaf("nope", CmpSw, ""), false},
		{"sw/unicode", leaf("città", CmpSw, "Zü"), true},
		{"ew", leaf("source", CmpEw, "DAQ"), true},
		{"ew/no", leaf("source", CmpEw, "NAS"), false},
		{"ew/missing", leaf("nope", CmpEw, "x"), false},
		{"ew/unicode", leaf("città", CmpEw, "☃"), true},
		{"ct", leaf("word", CmpCt, "b"), true},
		{"ct/no", leaf("word", CmpCt, "d"), false},
		{"ct/empty val", leaf("word", CmpCt, ""), true},
		{"ct/missing", leaf("nope", CmpCt, ""), false},
		{"gt", leaf("price", CmpGt, "100"), true},
		{"gt/equal", leaf("price", CmpGt, "150.25"), false},
		{"gt/missing", leaf("nope", CmpGt, "1"), false},
		{"gt/not a number", leaf("word", CmpGt, "1"), false},
		{"gt/empty value", leaf("empty", CmpGt, "-1"), false},
		{"gt/operand not a number", leaf("price", CmpGt, "abc"), false},
		{"gte/equal", leaf("volume", CmpGte, "1000"), true},
		{"gte/exponent", leaf("volume", CmpGte, "1e3"), true},
		{"gte/less", leaf("volume", CmpGte, "1000.0001"), false},
		{"lt", leaf("price", CmpLt, "200"), true},
		{"lt/equal", leaf("price", CmpLt, "150.250"), false},
		{"lt/negative", leaf("price", CmpLt, "-200"), false},
		{"lte/equal", leaf("xG", CmpLte, "0.8"), true},
		{"lte/exponent", leaf("xG", CmpLte, "8e-1"), true},
		{"lte/less", leaf("xG", CmpLte, "0.79999999999999999999999"), false},
		{"lte/not a number", leaf("word", CmpLte, "1e9"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := mustCompile(t, tc.node)
			if got := f.Match(tags); got != tc.want {
				t.Errorf("%s on %v = %v, want %v", Format(tc.node), tags, got, tc.want)
			}
		})
	}
}

func manyValues(prefix string, n int, extra ...string) []string {
	vals := make([]string, 0, n+len(extra))
	for i := range n {
		vals = append(vals, prefix+strconv.Itoa(i))
	}
	return append(vals, extra...)
}

func TestMatchBranches(t *testing.T) {
	yes := leaf("ticker", CmpEq, "AAPL")
	no := leaf("ticker", CmpEq, "MSFT")
	cases := []struct {
		name string
		node *protocol.FilterNode
		want bool
	}{
		{"and/all true", branch(OpAnd, yes, yes, yes), true},
		{"and/one false", branch(OpAnd, yes, no, yes), false},
		{"and/single", branch(OpAnd, yes), true},
		{"or/one true", branch(OpOr, no, no, yes), true},
		{"or/all false", branch(OpOr, no, no), false},
		{"or/single", branch(OpOr, no), false},
		{"not/true", branch(OpNot, yes), false},
		{"not/false", branch(OpNot, no), true},
		{"not/not", branch(OpNot, branch(OpNot, yes)), true},
		{"nested", branch(OpOr, branch(OpAnd, yes, no), branch(OpNot, no)), true},
		{"not eq missing", branch(OpNot, leaf("nope", CmpEq, "x")), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustCompile(t, tc.node).Match(tags); got != tc.want {
				t.Errorf("%s = %v, want %v", Format(tc.node), got, tc.want)
			}
		})
	}
}

func TestMatchExpressions(t *testing.T) {
	cases := []struct {
		expr string
		tags map[string]string
		want bool
	}{
		{`event_type == "goal" || (event_type == "shot" && xG >= 0.8)`, map[string]string{"event_type": "goal"}, true},
		{`event_type == "goal" || (event_type == "shot" && xG >= 0.8)`, map[string]string{"event_type": "shot", "xG": "0.80"}, true},
		{`event_type == "goal" || (event_type == "shot" && xG >= 0.8)`, map[string]string{"event_type": "shot", "xG": "0.79"}, false},
		{`event_type == "goal" || (event_type == "shot" && xG >= 0.8)`, map[string]string{"event_type": "shot"}, false},
		{`count == 42`, map[string]string{"count": "42.000"}, true},
		{`count == 42`, map[string]string{"count": "4.2e1"}, true},
		{`count == "42"`, map[string]string{"count": "42.000"}, false},
		{`count == 42`, map[string]string{"count": "forty-two"}, false},
		{`count != 42`, map[string]string{"count": "42.0"}, false},
		{`count != 42`, map[string]string{"count": "43"}, true},
		{`count != 42`, map[string]string{}, false},
		{`!(count == 42)`, map[string]string{}, true},
		{`count != "42"`, map[string]string{}, true},
		{`ticker not in ("GOOG", "MSFT") && !exists(region)`, map[string]string{"ticker": "AAPL"}, true},
		{`ticker not in ("GOOG", "MSFT") && !exists(region)`, map[string]string{"ticker": "AAPL", "region": ""}, false},
		{`"2fa" == "on"`, map[string]string{"2fa": "on"}, true},
		{`name contains "oo"`, nil, false},
		{`!exists(name)`, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			f := mustCompile(t, mustParse(t, tc.expr))
			if got := f.Match(tc.tags); got != tc.want {
				t.Errorf("on %v = %v, want %v", tc.tags, got, tc.want)
			}
		})
	}
}

func TestNilFilterMatchesEverything(t *testing.T) {
	f, err := Compile(nil, Limits{})
	if err != nil || f != nil {
		t.Fatalf("Compile(nil) = %v, %v; want nil, nil", f, err)
	}
	if !f.Match(nil) || !f.Match(tags) {
		t.Error("nil filter refused a publication")
	}
}

func TestAnd(t *testing.T) {
	server := mustCompile(t, mustParse(t, `team == "eng"`))
	client := mustCompile(t, mustParse(t, `role == "admin"`))
	cases := []struct {
		name string
		f    *Filter
		tags map[string]string
		want bool
	}{
		{"both", And(server, client), map[string]string{"team": "eng", "role": "admin"}, true},
		{"server refuses", And(server, client), map[string]string{"team": "ops", "role": "admin"}, false},
		{"client refuses", And(server, client), map[string]string{"team": "eng", "role": "dev"}, false},
		{"nil server", And(nil, client), map[string]string{"role": "admin"}, true},
		{"nil client", And(server, nil), map[string]string{"team": "ops"}, false},
		{"both nil", And(nil, nil), nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.Match(tc.tags); got != tc.want {
				t.Errorf("Match(%v) = %v, want %v", tc.tags, got, tc.want)
			}
		})
	}
	if And(nil, client) != client || And(server, nil) != server {
		t.Error("And with a nil side did not return the other side")
	}
}
