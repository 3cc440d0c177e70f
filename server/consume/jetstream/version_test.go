package jetstream

import "testing"

func TestVersionAtLeast(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"2.9.10", false},
		{"2.10.0", true},
		{"v2.10.4-beta.1", true},
		{"2.11.3", true},
		{"3.0.0", true},
		{"1.99.0", false},
		{"2.1", false},
		{"junk", true}, // unknown: not refused
	} {
		if got := versionAtLeast(tc.v, 2, 10); got != tc.want {
			t.Errorf("versionAtLeast(%q, 2, 10) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
