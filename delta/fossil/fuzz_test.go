package fossil

import (
	"bytes"
	"errors"
	"testing"
	"unicode/utf8"
)

func addSeedPairs(f *testing.F) {
	for _, p := range roundTripPairs() {
		if len(p.source)+len(p.target) <= 16<<10 {
			f.Add(p.source, p.target)
		}
	}
}

// FuzzRoundTrip checks that every delta Create makes rebuilds its target, and that a
// valid UTF-8 target gives a valid UTF-8 delta.
func FuzzRoundTrip(f *testing.F) {
	addSeedPairs(f)
	f.Fuzz(func(t *testing.T, source, target []byte) {
		d := Create(source, target)
		got, err := Apply(source, d)
		if err != nil {
			t.Fatalf("Apply: %v (delta %q)", err, clip(d))
		}
		if !bytes.Equal(got, target) {
			t.Fatalf("Apply rebuilt %q, want %q", clip(got), clip(target))
		}
		if utf8.Valid(target) && !utf8.Valid(d) {
			t.Fatalf("valid UTF-8 target, delta is not: %q", clip(d))
		}
	})
}

// FuzzApply feeds Apply arbitrary deltas: it must return a target or ErrCorrupt, never
// panic, and a target it returns must satisfy the delta's own length.
func FuzzApply(f *testing.F) {
	for _, p := range roundTripPairs() {
		if len(p.source)+len(p.target) <= 16<<10 {
			f.Add(p.source, Create(p.source, p.target))
		}
	}
	f.Add([]byte("0123456789"), []byte("4\n4@0,0;"))
	f.Add([]byte(""), []byte("~~~~~~\n0;"))
	f.Fuzz(func(t *testing.T, source, delta []byte) {
		got, err := Apply(source, delta)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Apply error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		r := reader{buf: delta}
		if n, _ := r.number(); uint64(len(got)) != n {
			t.Fatalf("Apply returned %d bytes, the delta announces %d", len(got), n)
		}
	})
}
