package httpstream_test

import (
	"testing"

	"github.com/gyrehq/gyre/transport/httpstream"
)

func TestAppendEvent(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"one line", `{"a":1}`, "data: {\"a\":1}\n\n"},
		{"empty", "", "data: \n\n"},
		{"lf", "a\nb", "data: a\ndata: b\n\n"},
		{"crlf", "a\r\nb", "data: a\ndata: b\n\n"},
		{"cr", "a\rb", "data: a\ndata: b\n\n"},
		{"trailing lf", "a\n", "data: a\ndata: \n\n"},
		{"blank lines", "a\n\nb", "data: a\ndata: \ndata: b\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(httpstream.AppendEvent([]byte("x"), []byte(tt.data)))
			if got != "x"+tt.want {
				t.Errorf("AppendEvent(%q) = %q, want %q", tt.data, got, "x"+tt.want)
			}
			// An EventSource joins the data lines with "\n": what it hands
			// the listener is the data with its line ends normalised.
			if ev := parseEvents(t, got[1:]); len(ev) != 1 || ev[0] != normalise(tt.data) {
				t.Errorf("parsed %q, want [%q]", ev, normalise(tt.data))
			}
		})
	}
}

func normalise(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n':
		case s[i] == '\r':
			out = append(out, '\n')
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}
