package filter

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/protocol"
)

func TestParse(t *testing.T) {
	eq := func(k, v string) *protocol.FilterNode { return leaf(k, CmpEq, v) }
	cases := []struct {
		expr string
		want *protocol.FilterNode
	}{
		{`a == "1"`, eq("a", "1")},
		{`a != "x"`, leaf("a", CmpNeq, "x")},
		{`count > 42`, leaf("count", CmpGt, "42")},
		{`count >= "42"`, leaf("count", CmpGte, "42")},
		{`price <= 99.5`, leaf("price", CmpLte, "99.5")},
		{`t < -1.5e-3`, leaf("t", CmpLt, "-1.5e-3")},
		{`x == 0.8`, branch(OpAnd, leaf("x", CmpGte, "0.8"), leaf("x", CmpLte, "0.8"))},
		{`x != 1E3`, branch(OpOr, leaf("x", CmpLt, "1E3"), leaf("x", CmpGt, "1E3"))},
		{`ticker in ("GOOG", "AAPL")`, list("ticker", CmpIn, "GOOG", "AAPL")},
		{`ticker not in ("GOOG")`, list("ticker", CmpNin, "GOOG")},
		{`exists(region)`, leaf("region", CmpEx, "")},
		{`!exists(region)`, leaf("region", CmpNex, "")},
		{`! exists ( region )`, leaf("region", CmpNex, "")},
		{`!(exists(region))`, branch(OpNot, leaf("region", CmpEx, ""))},
		{`!!exists(region)`, branch(OpNot, leaf("region", CmpNex, ""))},
		{`ticker startswith "GO"`, leaf("ticker", CmpSw, "GO")},
		{`ticker endswith "G"`, leaf("ticker", CmpEw, "G")},
		{`name contains "oo"`, leaf("name", CmpCt, "oo")},
		{`!(a == "1")`, branch(OpNot, eq("a", "1"))},
		{`!a == "1"`, branch(OpNot, eq("a", "1"))},
		{`a == "1" && b == "2" && c == "3"`, branch(OpAnd, eq("a", "1"), eq("b", "2"), eq("c", "3"))},
		{`a == "1" || b == "2" && c == "3"`, branch(OpOr, eq("a", "1"), branch(OpAnd, eq("b", "2"), eq("c", "3")))},
		{`(a == "1" || b == "2") && c == "3"`, branch(OpAnd, branch(OpOr, eq("a", "1"), eq("b", "2")), eq("c", "3"))},
		{`(a == "1" && b == "2") && c == "3"`, branch(OpAnd, branch(OpAnd, eq("a", "1"), eq("b", "2")), eq("c", "3"))},
		{`((a == "1"))`, eq("a", "1")},
		{`!a == "1" && b == "2"`, branch(OpAnd, branch(OpNot, eq("a", "1")), eq("b", "2"))},
		{`all(a == "1")`, branch(OpAnd, eq("a", "1"))},
		{`any(a == "1", b == "2" || c == "3")`, branch(OpOr, eq("a", "1"), branch(OpOr, eq("b", "2"), eq("c", "3")))},
		{`event_type == "goal" || (event_type == "shot" && xG >= 0.8)`,
			branch(OpOr, eq("event_type", "goal"), branch(OpAnd, eq("event_type", "shot"), leaf("xG", CmpGte, "0.8")))},
		{`"my key" == "v"`, eq("my key", "v")},
		{`"2fa" in ("on")`, list("2fa", CmpIn, "on")},
		{`exists("a b")`, leaf("a b", CmpEx, "")},
		{`user.id-x_1 == "1"`, eq("user.id-x_1", "1")},
		{`città == "Zürich"`, eq("città", "Zürich")},
		{`_a == ""`, eq("_a", "")},
		{`exists == "1"`, eq("exists", "1")},
		{`exists(exists)`, leaf("exists", CmpEx, "")},
		{`in in ("x")`, list("in", CmpIn, "x")},
		{`not not in ("x")`, list("not", CmpNin, "x")},
		{`all == "1" && any != "2"`, branch(OpAnd, eq("all", "1"), leaf("any", CmpNeq, "2"))},
		{`contains contains "c"`, leaf("contains", CmpCt, "c")},
		{`a == "q\"b\\s\n\t\r\u00e9\U0001F600\x41\xff"`, eq("a", "q\"b\\s\n\t\r\u00e9\U0001F600A\xff")},
		{"a ==\n\t\"1\"\r\n&& b == \"2\"", branch(OpAnd, eq("a", "1"), eq("b", "2"))},
		{`a=="1"&&b!="2"||!exists(c)`, branch(OpOr, branch(OpAnd, eq("a", "1"), leaf("b", CmpNeq, "2")), leaf("c", CmpNex, ""))},
		{`a==-1`, branch(OpAnd, leaf("a", CmpGte, "-1"), leaf("a", CmpLte, "-1"))},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			got := mustParse(t, tc.expr)
			if !got.EqualVT(tc.want) {
				t.Errorf("Parse = %s\nwant    %s", treeString(t, got), treeString(t, tc.want))
			}
			if _, err := Compile(got, Unlimited); err != nil {
				t.Errorf("parsed tree does not compile: %v", err)
			}
		})
	}
}

func treeString(t *testing.T, n *protocol.FilterNode) string {
	t.Helper()
	b, err := TreeJSON(n)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func TestParseErrors(t *testing.T) {
	unary := []string{"!", "(", "exists", "all", "any", "key"}
	ops := []string{"==", "!=", "<", "<=", ">", ">=", "in", "not in", "startswith", "endswith", "contains"}
	cases := []struct {
		expr     string
		pos      int
		msg      string
		expected []string
	}{
		{``, 0, "found end of input", unary},
		{`   `, 3, "found end of input", unary},
		{`a`, 1, "found end of input", ops},
		{`a b`, 2, `found "b"`, ops},
		{`a < ""`, 4, "empty operand: < compares numbers", []string{"number"}},
		{`a ==`, 4, "found end of input", []string{"string", "number"}},
		{`a > b`, 4, `found "b"`, []string{"number", "string"}},
		{`a == "1" b`, 9, `found "b"`, []string{"&&", "||", "end of input"}},
		{`a == "1" &&`, 11, "found end of input", unary},
		{`a == "1" || )`, 12, `found ")"`, unary},
		{`(a == "1"`, 9, "found end of input", []string{"&&", "||", ")"}},
		{`a == "1")`, 8, `found ")"`, []string{"&&", "||", "end of input"}},
		{`a in "x"`, 5, `found "\"x\""`, []string{"("}},
		{`a in ()`, 6, `found ")"`, []string{"string"}},
		{`a in ("x"`, 9, "found end of input", []string{",", ")"}},
		{`a in ("x",)`, 10, `found ")"`, []string{"string"}},
		{`a in ("x" "y")`, 10, `found "\"y\""`, []string{",", ")"}},
		{`a in (1)`, 6, `found number 1, which this operator compares as text: write "1"`, []string{"string"}},
		{`a startswith 1`, 13, `found number 1, which this operator compares as text`, []string{"string"}},
		{`a not "x"`, 6, `found "\"x\""`, []string{"in"}},
		{`exists(`, 7, "found end of input", []string{"key"}},
		{`exists(a`, 8, "found end of input", []string{")"}},
		{`exists(1)`, 7, `found "1"`, []string{"key"}},
		{`exists("")`, 7, "empty key", nil},
		{`"" == "x"`, 0, "empty key", nil},
		{`all()`, 4, `found ")"`, unary},
		{`all(a == "1" b`, 13, `found "b"`, []string{"&&", "||", ",", ")"}},
		{`!`, 1, "found end of input", unary},
		{`1 == "x"`, 0, `found "1"`, unary},
		{`a = "1"`, 2, `unexpected character "="`, []string{"=="}},
		{`a == "1" & b`, 9, `unexpected character "&"`, []string{"&&"}},
		{`a == "1" | b`, 9, `unexpected character "|"`, []string{"||"}},
		{`a == #`, 5, `unexpected character "#"`, nil},
		{`a == "1" ☃`, 9, `unexpected character "\u2603"`, nil},
		{`a == "abc`, 5, "unterminated string", nil},
		{`a == "abc\`, 9, "unterminated string", nil},
		{"a == \"ab\nc\"", 8, "newline in string", nil},
		{`a == "\q"`, 6, `unknown escape \q`, nil},
		{`a == "\u12"`, 6, `escape \u needs 4 hex digits`, nil},
		{`a == "\u12zz"`, 6, `escape \u needs 4 hex digits`, nil},
		{`a == "\x+1"`, 6, `escape \x needs 2 hex digits`, nil},
		{`a == "\ud800"`, 6, `escape \ud800 is not a valid Unicode code point`, nil},
		{`a == "\U00110000"`, 6, `escape \U00110000 is not a valid Unicode code point`, nil},
		{`a == 1.`, 5, `malformed number "1."`, nil},
		{`a == 1e`, 5, `malformed number "1e"`, nil},
		{`a == 1.2.3`, 5, `malformed number "1.2.3"`, nil},
		{`a == 42abc`, 5, `malformed number "42abc"`, nil},
		{`a == -x`, 5, `unexpected character "-"`, nil},
		{strings.Repeat("(", 300) + `a == "1"` + strings.Repeat(")", 300), 256, "nested deeper than 256 levels", nil},
		{strings.Repeat("!", 300) + `a == "1"`, 256, "nested deeper than 256 levels", nil},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			n, err := Parse(tc.expr)
			if err == nil {
				t.Fatalf("Parse accepted it: %s", treeString(t, n))
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v is not a *SyntaxError", err, err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Error("syntax error does not match ErrInvalid")
			}
			if se.Pos != tc.pos {
				t.Errorf("Pos = %d, want %d (%v)", se.Pos, tc.pos, err)
			}
			if !strings.HasPrefix(se.Msg, tc.msg) {
				t.Errorf("Msg = %q, want prefix %q", se.Msg, tc.msg)
			}
			if !slices.Equal(se.Expected, tc.expected) {
				t.Errorf("Expected = %q, want %q", se.Expected, tc.expected)
			}
		})
	}
}

func TestSyntaxErrorMessage(t *testing.T) {
	cases := []struct {
		expr       string
		line, col  int
		wantString string
	}{
		{`a == "1" b`, 1, 10, `filter: syntax error at offset 9: found "b"; expected "&&", "||" or end of input`},
		{`a`, 1, 2, `filter: syntax error at offset 1: found end of input; expected "==", "!=", "<", "<=", ">", ">=", "in", "not in", "startswith", "endswith" or "contains"`},
		{`exists(`, 1, 8, `filter: syntax error at offset 7: found end of input; expected a key`},
		{`a == "x`, 1, 6, `filter: syntax error at offset 5: unterminated string`},
		{"a == \"1\" &&\n  b ==", 2, 7, `filter: syntax error at line 2, column 7 (offset 18): found end of input; expected a string or a number`},
		{"a == \"é\" &&\n  é ! 1", 2, 5, `filter: syntax error at line 2, column 5 (offset 18): found "!"; expected "==", "!=", "<", "<=", ">", ">=", "in", "not in", "startswith", "endswith" or "contains"`},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			_, err := Parse(tc.expr)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse error = %v, want a *SyntaxError", err)
			}
			if se.Line != tc.line || se.Col != tc.col {
				t.Errorf("at %d:%d, want %d:%d", se.Line, se.Col, tc.line, tc.col)
			}
			if err.Error() != tc.wantString {
				t.Errorf("Error() = %s\nwant      %s", err, tc.wantString)
			}
		})
	}
}
