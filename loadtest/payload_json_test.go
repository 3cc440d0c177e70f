package loadtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/klauspost/compress/flate"
)

// feedDoc is what a --payload json document holds.
type feedDoc struct {
	GB     []int64          `json:"gb"`
	Events []map[string]any `json:"events"`
	Cursor string           `json:"cursor"`
	Note   *string          `json:"note"`
}

func TestJSONPayload(t *testing.T) {
	const sent = 1732550400123456789
	for _, size := range []int{64, 100, 128, 200, 512, 1000, 1024, 4096, 65536} {
		for _, seq := range []uint64{1, 999, 1 << 40} {
			t.Run(fmt.Sprintf("%d/%d", size, seq), func(t *testing.T) {
				m := newPayloadMaker(PayloadJSON, size, 42)
				b := m.append([]byte("prefix"), 3, seq, sent)
				p := b[len("prefix"):]
				// Only a stamp too long for the size makes it longer.
				if len(p) != size && (size >= 128 || len(p) < size) {
					t.Fatalf("size %d, want %d: %s", len(p), size, p)
				}
				var doc feedDoc
				if err := json.Unmarshal(p, &doc); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, p)
				}
				if s, ok := findStamp(b); !ok || s != (stamp{publisher: 3, seq: seq, sentNano: sent}) {
					t.Fatalf("findStamp = %+v %v", s, ok)
				}
				if doc.Note == nil || len(doc.Cursor) != cursorLen {
					t.Fatalf("cursor %q, note %v", doc.Cursor, doc.Note)
				}
				if size >= 512 && len(doc.Events) < 2 {
					t.Fatalf("%d events in %d bytes", len(doc.Events), size)
				}
				for _, ev := range doc.Events {
					if ev["id"] == nil || ev["type"] == nil || ev["symbol"] == nil || ev["time"] == nil {
						t.Fatalf("event %v lacks a common field", ev)
					}
				}
				// The same seed, publisher and number make the same document.
				if again := newPayloadMaker(PayloadJSON, size, 42).append(nil, 3, seq, sent); !bytes.Equal(again, p) {
					t.Fatalf("not deterministic:\n%s\n%s", p, again)
				}
			})
		}
	}
	// Another number, publisher or seed makes other events.
	events := func(b []byte) []byte { return b[bytes.Index(b, []byte(`"events"`)):] }
	m := newPayloadMaker(PayloadJSON, 1024, 42)
	base := events(m.append(nil, 0, 5, 1))
	for name, other := range map[string][]byte{
		"next number":     m.append(nil, 0, 6, 1),
		"other publisher": m.append(nil, 1, 5, 1),
		"other seed":      newPayloadMaker(PayloadJSON, 1024, 43).append(nil, 0, 5, 1),
	} {
		if bytes.Equal(events(other), base) {
			t.Errorf("%s: the same events", name)
		}
	}
	// The pad payload stays what it was.
	if got := newPayloadMaker(PayloadPad, 100, 1).append(nil, 1, 2, 3); !bytes.Equal(got, appendPayload(nil, 1, 2, 3, 100)) {
		t.Errorf("pad payload %s", got)
	}
}

// deflateRatio is how many times level-1 deflate (Gyre's default) shrinks
// docs, each compressed on its own as without context takeover.
func deflateRatio(t *testing.T, docs [][]byte) float64 {
	t.Helper()
	var raw, packed int
	var buf bytes.Buffer
	fw, err := flate.NewWriter(&buf, flate.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		buf.Reset()
		fw.Reset(&buf)
		_, _ = fw.Write(d)
		_ = fw.Flush()
		raw += len(d)
		packed += buf.Len() - 4 // the tail a server strips
	}
	return float64(raw) / float64(packed)
}

// TestJSONPayloadCompresses: the JSON feed compresses as real feeds do,
// better with size, and far less than the padding.
func TestJSONPayloadCompresses(t *testing.T) {
	docs := func(kind string, size int) [][]byte {
		m := newPayloadMaker(kind, size, 1)
		var out [][]byte
		for seq := range uint64(100) {
			out = append(out, m.append(nil, 0, seq+1, 1732550400123456789))
		}
		return out
	}
	for _, tt := range []struct {
		size     int
		min, max float64
	}{
		{512, 1.4, 2.1},
		{1024, 2, 3},
		{2048, 2.8, 3.8},
		{4096, 3.5, 4.8},
		{16384, 4.5, 6},
	} {
		r := deflateRatio(t, docs(PayloadJSON, tt.size))
		t.Logf("json %5d B: %.2f×", tt.size, r)
		if r < tt.min || r > tt.max {
			t.Errorf("json payload of %d bytes compresses %.2f times, want %.1f to %.1f", tt.size, r, tt.min, tt.max)
		}
	}
	if r := deflateRatio(t, docs(PayloadPad, 1024)); r < 10 {
		t.Errorf("pad payload compresses %.2f times, want it far above a real feed", r)
	}
}

func BenchmarkJSONPayload(b *testing.B) {
	for _, size := range []int{128, 1024, 16384} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			b.ReportAllocs()
			m := newPayloadMaker(PayloadJSON, size, 1)
			buf := make([]byte, 0, size+64)
			var seq uint64
			for b.Loop() {
				seq++
				buf = m.append(buf[:0], 0, seq, 1732550400123456789)
			}
			b.SetBytes(int64(size))
		})
	}
}
