package protocol

import "math"

// scanNumber validates a JSON number at r.pos and steps over it. It reports whether the
// number was negative and whether it had a fraction or exponent.
func (r *jsonReader) scanNumber() (start int, neg, integer bool) {
	data := r.data
	i := r.pos
	start = i
	if i < len(data) && data[i] == '-' {
		neg = true
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = skipDigits(data, i)
	default:
		r.pos = i
		r.fail("invalid number")
		return start, false, false
	}
	integer = true
	if i < len(data) && data[i] == '.' {
		integer = false
		j := skipDigits(data, i+1)
		if j == i+1 {
			r.pos = j
			r.fail("invalid number")
			return start, false, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		integer = false
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := skipDigits(data, i)
		if j == i {
			r.pos = j
			r.fail("invalid number")
			return start, false, false
		}
		i = j
	}
	r.pos = i
	return start, neg, integer
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}

// magnitude reads an integer value and returns its absolute value and sign. Integer
// fields take integer literals only: a fraction, an exponent or a quoted number is a
// type error rather than something to round. null reads as 0.
func (r *jsonReader) magnitude() (abs uint64, neg bool) {
	c := r.peek()
	if c == 'n' {
		r.null()
		return 0, false
	}
	if c != '-' && (c < '0' || c > '9') {
		r.fail("expected integer")
		return 0, false
	}
	start, neg, integer := r.scanNumber()
	if r.err != nil {
		return 0, false
	}
	if !integer {
		r.fail("expected integer")
		return 0, false
	}
	digits := r.data[start:r.pos]
	if neg {
		digits = digits[1:]
	}
	for _, d := range digits {
		v := uint64(d - '0')
		if abs > (math.MaxUint64-v)/10 {
			r.fail("integer out of range")
			return 0, false
		}
		abs = abs*10 + v
	}
	return abs, neg
}

func (r *jsonReader) unsigned(limit uint64) uint64 {
	abs, neg := r.magnitude()
	if neg && abs != 0 {
		r.fail("negative value for unsigned field")
		return 0
	}
	if abs > limit {
		r.fail("integer out of range")
		return 0
	}
	return abs
}

func (r *jsonReader) signed(limit uint64) int64 {
	abs, neg := r.magnitude()
	if neg {
		if abs > limit+1 {
			r.fail("integer out of range")
			return 0
		}
		return int64(-abs) // two's complement keeps -(limit+1) exact
	}
	if abs > limit {
		r.fail("integer out of range")
		return 0
	}
	return int64(abs)
}

func (r *jsonReader) u32() uint32 { return uint32(r.unsigned(math.MaxUint32)) }
func (r *jsonReader) u64() uint64 { return r.unsigned(math.MaxUint64) }
func (r *jsonReader) i32() int32  { return int32(r.signed(math.MaxInt32)) }
func (r *jsonReader) i64() int64  { return r.signed(math.MaxInt64) }
