package fossil

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

// withSum finishes a hand-written delta with the checksum of target.
func withSum(body, target string) string {
	return body + string(appendNumber(nil, uint64(checksum([]byte(target))))) + ";"
}

func TestApplyHandWritten(t *testing.T) {
	src := []byte("0123456789abcdefghij")
	tests := []struct {
		name  string
		delta string
		want  string
	}{
		{"copy all", withSum("K\nK@0,", string(src)), string(src)},
		{"copy middle", withSum("4\n4@A,", "abcd"), "abcd"},
		{"insert", withSum("3\n3:xyz", "xyz"), "xyz"},
		{"insert with separators", withSum("5\n5:@,:;\n", "@,:;\n"), "@,:;\n"},
		{"copy insert copy", withSum("9\n3@0,3:xyz3@H,", "012xyzhij"), "012xyzhij"},
		{"copy twice", withSum("8\n4@0,4@0,", "01230123"), "01230123"},
		{"zero-length copy copies nothing", withSum("2\n0@5,2:ok", "ok"), "ok"},
		{"empty target", "0\n0;", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Apply(src, []byte(tt.delta))
			if err != nil {
				t.Fatalf("Apply(%q): %v", tt.delta, err)
			}
			if string(got) != tt.want {
				t.Fatalf("Apply(%q) = %q, want %q", tt.delta, got, tt.want)
			}
		})
	}
}

func TestApplyCorrupt(t *testing.T) {
	src := []byte("0123456789abcdefghij")
	tests := []struct {
		name  string
		delta string
	}{
		{"empty delta", ""},
		{"no header digits", "\n0;"},
		{"header not ended by newline", "4;"},
		{"header only", "4\n"},
		{"bad checksum", "4\n4@0,0;"},
		{"checksum of another target", withSum("4\n4@0,", "0124")},
		{"no trailer", "4\n4@0,"},
		{"built less than announced", withSum("5\n4@0,", "0123")},
		{"copy past announced length", withSum("3\n4@0,", "0123")},
		{"insert past announced length", withSum("3\n4:abcd", "abcd")},
		{"copy past the end of the source", withSum("4\n4@H,", "hij?")},
		{"copy offset past the source", withSum("1\n1@~~,", "x")},
		{"insert past the end of the delta", "9\n9:abc"},
		{"copy without comma", withSum("4\n4@0;", "0123")},
		{"copy without offset", withSum("4\n4@,", "0123")},
		{"command without count", withSum("4\n@0,", "0123")},
		{"unknown command", withSum("4\n4#0,", "0123")},
		{"bytes after the trailer", withSum("4\n4@0,", "0123") + "x"},
		{"huge count", withSum("4\n~~~~~~~~~~~~@0,", "0123")},
		{"count over 32 bits", withSum("4\n4~~~~~@0,", "0123")},
		{"huge target length", "~~~~~~~~~~~~\n0;"},
		{"target length over 32 bits", "4~~~~~\n0;"},
		{"target length more than the delta can build", "3~~~~~\n3~~~~~@0,0;"},
		{"huge checksum", withSum("4\n4@0,", "0123")[:6] + "~~~~~~~~;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Apply(src, []byte(tt.delta))
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Apply(%q) = %q, %v; want an error wrapping ErrCorrupt", tt.delta, got, err)
			}
			if !strings.HasPrefix(err.Error(), "fossil: ") {
				t.Fatalf("error %q does not name the package", err)
			}
		})
	}
}

// TestApplyTruncated cuts real deltas at every length: no prefix is a valid delta.
func TestApplyTruncated(t *testing.T) {
	for _, p := range roundTripPairs()[:12] {
		t.Run(p.name, func(t *testing.T) {
			d := Create(p.source, p.target)
			for i := range len(d) {
				if _, err := Apply(p.source, d[:i]); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("prefix of %d of %d bytes: err %v, want ErrCorrupt", i, len(d), err)
				}
			}
		})
	}
}

// TestApplyWrongSource applies a delta to a source it was not made for: the checksum or
// the bounds must catch it.
func TestApplyWrongSource(t *testing.T) {
	src, tgt := similarJSON(5, 4000, 3)
	d := Create(src, tgt)
	other := bytes.Clone(src)
	other[len(other)/2] ^= 1
	if _, err := Apply(other, d); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("applying to a changed source: err %v, want ErrCorrupt", err)
	}
	if _, err := Apply(src[:len(src)/2], d); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("applying to a shortened source: err %v, want ErrCorrupt", err)
	}
}

func TestMaxTarget(t *testing.T) {
	tests := []struct {
		name          string
		source, delta int
		want          int
	}{
		{"no commands", 100, 3, 3},
		{"one copy", 100, 4, 104},
		{"many copies", 1000, 400, 100*1000 + 400},
		{"capped at 32 bits", 1 << 30, 1 << 20, min(maxNumber, math.MaxInt)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := maxTarget(tt.source, tt.delta); got != tt.want {
				t.Fatalf("maxTarget(%d, %d) = %d, want %d", tt.source, tt.delta, got, tt.want)
			}
		})
	}
}
