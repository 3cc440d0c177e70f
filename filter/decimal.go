package filter

// decimal is a number read from text, kept as views into that text so that reading a
// tag value for a numeric comparison allocates nothing. Its value is
//
//	(neg ? -1 : 1) × 0.d₁d₂d₃… × 10^exp
//
// where the significant digits d₁d₂… are hi followed by lo, without leading or
// trailing zeros. Zero has no digits. Comparing two decimals is then exact for any
// length and any exponent, which a fixed-width binary decimal cannot promise.
type decimal struct {
	neg    bool
	hi, lo string
	exp    int64
}

// maxExponentDigits bounds the digits of an exponent so that exp cannot overflow; a
// value with a longer exponent is not a number for the filter.
const maxExponentDigits = 9

// parseDecimal reads s as [sign] digits ["." digits] [("e"|"E") [sign] digits]. It
// reports false for anything else, including "", ".5", "5.", spaces, "Inf" and "NaN".
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		d.neg = s[i] == '-'
		i++
	}
	intStart := i
	i = skipDigits(s, i)
	intPart := s[intStart:i]
	if intPart == "" {
		return decimal{}, false
	}
	var frac string
	if i < len(s) && s[i] == '.' {
		start := i + 1
		i = skipDigits(s, start)
		frac = s[start:i]
		if frac == "" {
			return decimal{}, false
		}
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		var ok bool
		exp, i, ok = parseExponent(s, i+1)
		if !ok {
			return decimal{}, false
		}
	}
	if i != len(s) {
		return decimal{}, false
	}
	d.setDigits(intPart, frac, exp)
	return d, true
}

// setDigits strips the zeros that carry no value and places the decimal point.
func (d *decimal) setDigits(intPart, frac string, exp int64) {
	intPart = trimLeft(intPart)
	if intPart == "" {
		n := len(frac)
		frac = trimLeft(frac)
		exp -= int64(n - len(frac))
		frac = trimRight(frac)
		if frac == "" {
			*d = decimal{} // every zero is the same zero, whatever its sign
			return
		}
		d.hi, d.exp = frac, exp
		return
	}
	d.exp = exp + int64(len(intPart))
	if frac = trimRight(frac); frac == "" {
		intPart = trimRight(intPart)
	}
	d.hi, d.lo = intPart, frac
}

func parseExponent(s string, i int) (int64, int, bool) {
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && s[i] == '0' {
		i++
	}
	sig := i
	i = skipDigits(s, i)
	if i == start || i-sig > maxExponentDigits {
		return 0, i, false
	}
	var e int64
	for _, c := range []byte(s[sig:i]) {
		e = e*10 + int64(c-'0')
	}
	if neg {
		e = -e
	}
	return e, i, true
}

func skipDigits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func trimLeft(s string) string {
	for len(s) > 0 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

func trimRight(s string) string {
	for len(s) > 0 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	return s
}

func (d *decimal) isZero() bool { return d.hi == "" && d.lo == "" }

// cmp returns -1, 0 or +1 as d is less than, equal to or greater than e.
func (d *decimal) cmp(e *decimal) int {
	ds, es := d.sign(), e.sign()
	switch {
	case ds != es:
		if ds < es {
			return -1
		}
		return 1
	case ds == 0:
		return 0
	}
	c := d.cmpAbs(e)
	if ds < 0 {
		return -c
	}
	return c
}

func (d *decimal) sign() int {
	switch {
	case d.isZero():
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// cmpAbs compares magnitudes of two non-zero decimals: the one whose first significant
// digit sits higher is larger; at the same height the digits decide.
func (d *decimal) cmpAbs(e *decimal) int {
	if d.exp != e.exp {
		if d.exp < e.exp {
			return -1
		}
		return 1
	}
	return cmpDigits(d, e)
}

// cmpDigits compares the digit sequences hi+lo of two decimals without joining them:
// it walks both pairs of views, comparing the longest common stretch at once. A
// sequence that is a prefix of the other is the smaller, since neither ends in zero.
func cmpDigits(d, e *decimal) int {
	x, xrest := d.hi, d.lo
	y, yrest := e.hi, e.lo
	for {
		if x == "" {
			x, xrest = xrest, ""
		}
		if y == "" {
			y, yrest = yrest, ""
		}
		if x == "" || y == "" {
			break
		}
		n := min(len(x), len(y))
		if a, b := x[:n], y[:n]; a != b {
			if a < b {
				return -1
			}
			return 1
		}
		x, y = x[n:], y[n:]
	}
	switch {
	case x != "":
		return 1
	case y != "":
		return -1
	}
	return 0
}
