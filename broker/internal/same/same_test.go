package same

import "testing"

func TestBytes(t *testing.T) {
	buf := []byte("payload")
	for _, tt := range []struct {
		name string
		a, b []byte
		want bool
	}{
		{"the same slice", buf, buf, true},
		{"a shorter slice of it", buf, buf[:3], false},
		{"a later start", buf[1:], buf[1:], true},
		{"an equal copy", buf, []byte("payload"), false},
		{"both empty", nil, buf[:0], true},
	} {
		if got := Bytes(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: Bytes = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMap(t *testing.T) {
	m := map[string]string{"k": "v"}
	for _, tt := range []struct {
		name string
		a, b map[string]string
		want bool
	}{
		{"the same map", m, m, true},
		{"an equal copy", m, map[string]string{"k": "v"}, false},
		{"both empty", nil, map[string]string{}, true},
		{"one empty", m, nil, false},
	} {
		if got := Map(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: Map = %v, want %v", tt.name, got, tt.want)
		}
	}
}
