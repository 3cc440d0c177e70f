package fossil

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

type pair struct {
	name           string
	source, target []byte
}

// roundTripPairs covers the shapes a delta must handle: empty sides, inputs shorter than
// a block, identical, unrelated, binary, UTF-8 text and JSON documents of 1-100 KB with
// small edits.
func roundTripPairs() []pair {
	rng := rand.New(rand.NewPCG(7, 7))
	bin := randomBytes(rng, 20000)
	text := unicodeText(rng, 3000)
	zeros := make([]byte, 5000)
	ps := []pair{
		{"both empty", nil, nil},
		{"empty source", nil, []byte(`{"text":"hello"}`)},
		{"empty target", []byte(`{"text":"hello"}`), nil},
		{"short both", []byte("abc"), []byte("abd")},
		{"short source", []byte("abc"), []byte("abc abc abc abc abc abc abc")},
		{"short target", []byte("abcdefghijklmnopqrstuvwxyz"), []byte("abc")},
		{"identical", bin, bin},
		{"unrelated", randomBytes(rng, 3000), randomBytes(rng, 4000)},
		{"binary edits", bin, mutate(rng, bin, 20)},
		{"binary one byte", bin[:1000], mutate(rng, bin[:1000], 1)},
		{"prefix", bin[:5000], bin[:9000]},
		{"suffix", bin[4000:9000], bin[:9000]},
		{"truncated", bin[:9000], bin[:5000]},
		{"reordered", bin[:6000], append(append([]byte(nil), bin[3000:6000]...), bin[:3000]...)},
		{"repeated source", zeros, append(zeros[:4000:4000], 1, 2, 3)},
		{"repetition in target", bin[:100], bytes.Repeat(bin[:100], 50)},
		{"utf8 text", []byte(text), []byte(editText(rng, text, 30))},
		{"utf8 shifted", []byte(text), []byte("ü" + text[:len(text)/2] + "€" + text[len(text)/2:])},
	}
	for _, size := range []int{1 << 10, 10 << 10, 100 << 10} {
		for _, edits := range []int{1, 5, 50} {
			s, t := similarJSON(uint64(size+edits), size, edits)
			ps = append(ps, pair{"json " + itoa(size>>10) + "KB " + itoa(edits) + " edits", s, t})
		}
	}
	return ps
}

func itoa(n int) string { return string(appendDecimal(nil, n)) }

func appendDecimal(b []byte, n int) []byte {
	if n >= 10 {
		b = appendDecimal(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

func TestRoundTrip(t *testing.T) {
	for _, p := range roundTripPairs() {
		t.Run(p.name, func(t *testing.T) {
			d := Create(p.source, p.target)
			got, err := Apply(p.source, d)
			if err != nil {
				t.Fatalf("Apply: %v\ndelta: %q", err, clip(d))
			}
			if !bytes.Equal(got, p.target) {
				t.Fatalf("Apply rebuilt %d bytes that differ from the %d-byte target", len(got), len(p.target))
			}
			t.Logf("source %d, target %d, delta %d", len(p.source), len(p.target), len(d))
		})
	}
}

func TestRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	for i := range 300 {
		src := randomBytes(rng, rng.IntN(3000))
		// Few distinct byte values give many equal blocks and long hash chains.
		if i%3 == 0 {
			for j := range src {
				src[j] &= 3
			}
		}
		tgt := mutate(rng, src, rng.IntN(10))
		d := Create(src, tgt)
		got, err := Apply(src, d)
		if err != nil || !bytes.Equal(got, tgt) {
			t.Fatalf("case %d (source %d, target %d bytes): err %v, equal %v", i, len(src), len(tgt), err, bytes.Equal(got, tgt))
		}
	}
}

// TestDeltaSize checks that deltas are small where they should be and never much larger
// than the target.
func TestDeltaSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	tests := []struct {
		name           string
		source, target []byte
		max            int
	}{
		{"identical 100 KB", bytes.Repeat([]byte("0123456789abcdef"), 6400), bytes.Repeat([]byte("0123456789abcdef"), 6400), 20},
		{"identical 10 bytes", []byte("0123456789"), []byte("0123456789"), 16},
		{"unrelated 10 KB", randomBytes(rng, 10000), randomBytes(rng, 10000), 10000 + 16},
		{"empty target", randomBytes(rng, 100), nil, 4},
		{"empty source", nil, []byte("hello"), 5 + 11},
	}
	s, tg := similarJSON(1, 10<<10, 3)
	tests = append(tests, struct {
		name           string
		source, target []byte
		max            int
	}{"json 10 KB 3 edits", s, tg, len(tg) / 20})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Create(tt.source, tt.target)
			if len(d) > tt.max {
				t.Fatalf("delta of %d bytes, want at most %d: %q", len(d), tt.max, clip(d))
			}
		})
	}
}

func TestCreateExact(t *testing.T) {
	tests := []struct {
		name           string
		source, target string
		want           string
	}{
		{"both empty", "", "", "0\n0;"},
		{"identical", "abcd", "abcd", "4\n4@0,1XObD_;"},
		{"insert only", "", "abcd", "4\n4:abcd1XObD_;"},
		{"empty target", "abcd", "", "0\n0;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(Create([]byte(tt.source), []byte(tt.target))); got != tt.want {
				t.Fatalf("Create = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCreateCopies checks the commands for one small edit: a copy of the common part, an
// insert of the change and a copy of the rest, at the right offsets.
func TestCreateCopies(t *testing.T) {
	src := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 4))
	tgt := bytes.Replace(src, []byte("lazy"), []byte("sleepy"), 2)
	d := string(Create(src, tgt))
	first := bytes.Index(src, []byte("lazy"))
	wantPrefix := string(appendNumber(nil, uint64(len(tgt)))) + "\n" + string(appendNumber(nil, uint64(first))) + "@0,"
	if !strings.HasPrefix(d, wantPrefix) {
		t.Fatalf("delta %q does not start with %q", d, wantPrefix)
	}
	// The "y" of "sleepy" may come from the source's "lazy".
	if !strings.Contains(d, ":sleep") {
		t.Fatalf("delta %q does not insert the changed word", d)
	}
}

// TestDeltaIsUTF8 checks that a valid UTF-8 target gives a valid UTF-8 delta, which JSON
// connections need: there the delta travels as a JSON string.
func TestDeltaIsUTF8(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 19))
	for i := range 200 {
		src := unicodeText(rng, 50+rng.IntN(2000))
		tgt := editText(rng, src, 1+rng.IntN(20))
		if i%2 == 1 {
			cut := rng.IntN(len([]rune(tgt)))
			rs := []rune(tgt)
			tgt = string(rs[:cut]) + unicodeText(rng, 3) + string(rs[cut:])
		}
		d := Create([]byte(src), []byte(tgt))
		if !utf8.Valid(d) {
			t.Fatalf("case %d: delta is not valid UTF-8: %q", i, clip(d))
		}
		if got, err := Apply([]byte(src), d); err != nil || string(got) != tgt {
			t.Fatalf("case %d: round trip failed: %v", i, err)
		}
	}
}

func TestAppendCreateAppends(t *testing.T) {
	src, tgt := similarJSON(2, 2000, 2)
	prefix := []byte("prefix:")
	got := AppendCreate(append([]byte(nil), prefix...), src, tgt)
	if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], Create(src, tgt)) {
		t.Fatalf("AppendCreate did not append the delta Create returns")
	}
}

func TestAppendCreateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled items, so allocations are not steady")
	}
	src, tgt := similarJSON(4, 10<<10, 3)
	buf := make([]byte, 0, len(tgt)+64)
	allocs := testing.AllocsPerRun(100, func() {
		buf = AppendCreate(buf[:0], src, tgt)
	})
	if allocs != 0 {
		t.Fatalf("AppendCreate into a reused buffer: %v allocations per run, want 0", allocs)
	}
}

func TestNumberEncoding(t *testing.T) {
	tests := []struct {
		v    uint64
		want string
	}{
		{0, "0"}, {9, "9"}, {10, "A"}, {35, "Z"}, {36, "_"}, {37, "a"}, {62, "z"}, {63, "~"},
		{64, "10"}, {6246, "1Xb"}, {3193528526, "2zMM3E"}, {1<<32 - 1, "3~~~~~"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := string(appendNumber(nil, tt.v))
			if got != tt.want {
				t.Fatalf("appendNumber(%d) = %q, want %q", tt.v, got, tt.want)
			}
			if n := numberLen(tt.v); n != len(got) {
				t.Fatalf("numberLen(%d) = %d, want %d", tt.v, n, len(got))
			}
			r := reader{buf: []byte(got + ";")}
			if back, err := r.number(); err != nil || back != tt.v {
				t.Fatalf("reading %q: %d, %v", got, back, err)
			}
		})
	}
}

func TestChecksum(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want uint32
	}{
		{"empty", "", 0},
		{"one word", "abcd", 0x61626364},
		{"padded", "abcde", 0x61626364 + 0x65000000},
		{"three tail bytes", "abcdefg", 0x61626364 + 0x65666700},
		{"wraps at 2^32", "\xff\xff\xff\xff\x00\x00\x00\x02", 1},
		{"unrolled and tail", strings.Repeat("\x00\x00\x00\x01", 5) + "\x01", 5 + 0x01000000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checksum([]byte(tt.in)); got != tt.want {
				t.Fatalf("checksum = %#x, want %#x", got, tt.want)
			}
		})
	}
}

// clip shortens a delta for a failure message.
func clip(b []byte) []byte {
	if len(b) > 300 {
		return b[:300]
	}
	return b
}
