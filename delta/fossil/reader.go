package fossil

import (
	"errors"
	"fmt"
	"math"
)

var (
	errTruncated = errors.New("truncated")
	errNoDigits  = errors.New("number expected")
	errTooLarge  = errors.New("number over 32 bits")
)

// reader walks a delta. Its errors are details; Apply wraps them in ErrCorrupt.
type reader struct {
	buf []byte
	pos int
}

// number reads a base-64 number of at least one digit, no larger than 32 bits.
func (r *reader) number() (uint64, error) {
	start := r.pos
	var v uint64
	for r.pos < len(r.buf) {
		d := digitValue[r.buf[r.pos]]
		if d < 0 {
			break
		}
		v = v<<6 | uint64(d)
		if v > maxNumber {
			return 0, errTooLarge
		}
		r.pos++
	}
	switch {
	case r.pos < len(r.buf) && r.pos > start:
		return v, nil
	case r.pos == len(r.buf):
		return 0, errTruncated
	default:
		return 0, errNoDigits
	}
}

// length reads a number that counts or locates bytes, so it must fit an int: on 32-bit
// platforms that is less than the format allows.
func (r *reader) length() (int, error) {
	v, err := r.number()
	if err != nil {
		return 0, err
	}
	if v > math.MaxInt {
		return 0, errTooLarge
	}
	return int(v), nil
}

func (r *reader) byte() (byte, error) {
	if r.pos >= len(r.buf) {
		return 0, errTruncated
	}
	c := r.buf[r.pos]
	r.pos++
	return c, nil
}

func (r *reader) expect(want byte) error {
	c, err := r.byte()
	if err != nil {
		return err
	}
	if c != want {
		return fmt.Errorf("%q where %q belongs", c, want)
	}
	return nil
}
