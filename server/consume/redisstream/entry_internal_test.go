package redisstream

import "testing"

func TestIDLess(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"1-0", "2-0", true},
		{"2-0", "1-0", false},
		{"5-1", "5-2", true},
		{"5-2", "5-2", false},
		{"9-9", "10-0", true},
		{"0-0", "1-0", true},
		{"1700000000000-5", "1700000000001-0", true},
	} {
		if got := idLess(tt.a, tt.b); got != tt.want {
			t.Errorf("idLess(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
