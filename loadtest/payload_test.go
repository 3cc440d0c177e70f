package loadtest

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestPayload(t *testing.T) {
	tests := []struct {
		name     string
		pub      int
		seq      uint64
		ts       int64
		size     int
		wantSize int
	}{
		{"small", 0, 1, 1, 10, 21},
		{"min", 3, 12345, 1700000000123456789, minPayloadSize, minPayloadSize},
		{"padded", 1023, 1<<63 - 1, 1 << 61, 1000, 1000},
		{"big", 7, 9, 1700000000123456789, 200000, 200000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := appendPayload([]byte("prefix"), tt.pub, tt.seq, tt.ts, tt.size)
			p := b[len("prefix"):]
			if len(p) != tt.wantSize {
				t.Fatalf("size %d, want %d", len(p), tt.wantSize)
			}
			if !json.Valid(p) {
				t.Fatalf("not JSON: %s", p)
			}
			s, ok := findStamp(b)
			if !ok || s != (stamp{publisher: tt.pub, seq: tt.seq, sentNano: tt.ts}) {
				t.Fatalf("findStamp = %+v %v", s, ok)
			}
		})
	}
}

func TestFindStampRejects(t *testing.T) {
	for _, msg := range []string{
		``,
		`{"push":{"channel":"c","pub":{"data":{"text":"hello"}}}}`,
		`{"gb":[1,2]}`,
		`{"gb":[1,2,3}`,
		`{"gb":[,2,3]}`,
		`{"gb":[1,-2,3]}`,
		`{"gb":[1,2,99999999999999999999]}`,
		`{"gb":[100000,2,3]}`,
		`{"gb":[1,2,3`,
	} {
		if s, ok := findStamp([]byte(msg)); ok {
			t.Errorf("findStamp(%q) = %+v, want no stamp", msg, s)
		}
	}
}

func FuzzFindStamp(f *testing.F) {
	f.Add([]byte(`{"gb":[1,2,3],"p":"x"}`))
	f.Add([]byte(`{"push":{"pub":{"data":{"gb":[0,18446744073709551615,1]}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok := findStamp(b)
		if ok && (s.publisher < 0 || s.sentNano < 0) {
			t.Fatalf("stamp %+v", s)
		}
	})
}

func BenchmarkFindStamp(b *testing.B) {
	b.ReportAllocs()
	msg := []byte(`{"push":{"channel":"bench-fanout","pub":{"data":`)
	msg = appendPayload(msg, 0, 123456, 1700000000123456789, 128)
	msg = append(msg, `,"offset":1234}}}`...)
	for b.Loop() {
		if _, ok := findStamp(msg); !ok {
			b.Fatal("no stamp")
		}
	}
}

func TestParseNano(t *testing.T) {
	values := []uint64{1_000_000_000_000_000_000, 1_700_000_000_123_456_789, 1<<62 - 1, 9_999_999_999_999_999_999, 1_234_567_890_123_456_789}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		values = append(values, 1_000_000_000_000_000_000+r.Uint64N(9_000_000_000_000_000_000))
	}
	for _, v := range values {
		b := strconv.AppendUint(nil, v, 10)
		b = append(b, ']')
		if got, ok := parseNano(b); !ok || got != v {
			t.Fatalf("parseNano(%s) = %d, %v", b, got, ok)
		}
		// Whatever the position of a byte that is not a digit, the
		// number is refused.
		for i := range 19 {
			for _, c := range []byte{'/', ':', '?', 'a', 0, 0xb0} {
				bad := bytes.Clone(b)
				bad[i] = c
				if got, ok := parseNano(bad); ok {
					t.Fatalf("parseNano(%q) = %d, want refused", bad, got)
				}
			}
		}
	}
	// Other widths are read digit by digit.
	for _, s := range []string{"1]", "123456789012345678]", "12345678901234567890]"} {
		want, _, wantOK := parseUint([]byte(s), ']')
		if got, ok := parseNano([]byte(s)); got != want || ok != wantOK {
			t.Fatalf("parseNano(%s) = %d, %v; want %d, %v", s, got, ok, want, wantOK)
		}
	}
}

// FuzzParseNano: eight digits at a time reads what digit by digit reads.
func FuzzParseNano(f *testing.F) {
	f.Add([]byte("1700000000123456789]"))
	f.Add([]byte("17000000001234567:9]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		want, _, wantOK := parseUint(b, ']')
		got, ok := parseNano(b)
		if ok != wantOK || ok && got != want {
			t.Fatalf("parseNano(%q) = %d, %v; digit by digit %d, %v", b, got, ok, want, wantOK)
		}
	})
}
