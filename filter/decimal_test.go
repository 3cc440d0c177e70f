package filter

import (
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestParseDecimal(t *testing.T) {
	cases := []struct {
		in string
		ok bool
	}{
		{"0", true}, {"-0", true}, {"+0", true}, {"42", true}, {"0042", true},
		{"0.8", true}, {"0.80", true}, {"8e-1", true}, {"8E-1", true}, {"1e+3", true},
		{"-1.5e3", true}, {"1e000000000000003", true}, {"1e999999999", true},
		{"123456789012345678901234567890.123456789012345678901234567890", true},
		{"", false}, {"-", false}, {"+", false}, {".5", false}, {"5.", false},
		{"-.5", false}, {"1e", false}, {"1e+", false}, {"1.e3", false}, {"e3", false},
		{" 1", false}, {"1 ", false}, {"1,5", false}, {"0x1F", false}, {"Inf", false},
		{"NaN", false}, {"1_000", false}, {"abc", false}, {"1e1000000000", false},
		{"--1", false}, {"1.2.3", false}, {"٣", false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			if _, ok := parseDecimal(tc.in); ok != tc.ok {
				t.Errorf("parseDecimal(%q) ok = %v, want %v", tc.in, ok, tc.ok)
			}
		})
	}
}

func TestDecimalCmp(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"0.8", "0.80", 0}, {"0.8", "8e-1", 0}, {"0.80", "80e-2", 0}, {"0.8", "0.08e1", 0},
		{"0", "-0", 0}, {"0", "0.000e5", 0}, {"-0.0", "+0", 0}, {"100", "1e2", 0},
		{"100", "1E+2", 0}, {"0.001", "1e-3", 0}, {"00012.50", "12.5", 0},
		{"1", "2", -1}, {"2", "1", 1}, {"-1", "1", -1}, {"-2", "-1", -1}, {"-1", "0", -1},
		{"0", "0.0000001", -1}, {"99.5", "99.49999", 1}, {"99.5", "100", -1},
		{"10", "9.99999999999999999999999999", 1}, {"1e10", "9999999999", 1},
		{"1e-10", "0.0000000001", 0}, {"1e-10", "0.00000000011", -1},
		{"12345678901234567890123456789", "12345678901234567890123456788", 1},
		{"0.1000000000000000000001", "0.1", 1}, {"-0.1000000000000000000001", "-0.1", -1},
		{"1.5", "15e-1", 0}, {"105", "1.05e2", 0}, {"1.05", "1.5", -1}, {"1.5", "1.05", 1},
		{"1e999999999", "1e999999998", 1}, {"-1e-999999999", "0", -1},
	}
	for _, tc := range cases {
		t.Run(tc.a+"_"+tc.b, func(t *testing.T) {
			a, aok := parseDecimal(tc.a)
			b, bok := parseDecimal(tc.b)
			if !aok || !bok {
				t.Fatalf("parse %q: %v, %q: %v", tc.a, aok, tc.b, bok)
			}
			if got := a.cmp(&b); got != tc.want {
				t.Errorf("cmp(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
			if got := b.cmp(&a); got != -tc.want {
				t.Errorf("cmp(%s, %s) = %d, want %d", tc.b, tc.a, got, -tc.want)
			}
		})
	}
}

// TestDecimalCmpAgainstBigRat checks the comparison against math/big on random
// numbers in every notation, including the shapes that trip digit handling: leading
// and trailing zeros, exponents that move the point past all digits.
func TestDecimalCmpAgainstBigRat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		a, b := randomDecimal(rng), randomDecimal(rng)
		da, aok := parseDecimal(a)
		db, bok := parseDecimal(b)
		ra, _ := new(big.Rat).SetString(a)
		rb, _ := new(big.Rat).SetString(b)
		if !aok || !bok || ra == nil || rb == nil {
			t.Fatalf("cannot parse %q or %q", a, b)
		}
		if got, want := da.cmp(&db), ra.Cmp(rb); got != want {
			t.Fatalf("cmp(%s, %s) = %d, big.Rat says %d", a, b, got, want)
		}
	}
}

func randomDecimal(rng *rand.Rand) string {
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "0000123456789"[rng.IntN(13)] // zeros often
		}
		return string(b)
	}
	s := ""
	switch rng.IntN(3) {
	case 0:
		s = "-"
	case 1:
		s = "+"
	}
	s += digits(1 + rng.IntN(6))
	if rng.IntN(2) == 0 {
		s += "." + digits(1+rng.IntN(6))
	}
	if rng.IntN(2) == 0 {
		s += "e" + strconv.Itoa(rng.IntN(17)-8)
	}
	return s
}
