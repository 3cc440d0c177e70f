package loadtest

import (
	"encoding/json"
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
