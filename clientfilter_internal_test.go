package gyre

import (
	"testing"

	"github.com/gyrehq/gyre/protocol"
)

// stubTransport is an in-memory transport with an optional session id.
type stubTransport struct{ session string }

func (t *stubTransport) Name() string            { return "stub" }
func (t *stubTransport) Protocol() protocol.Type { return protocol.TypeJSON }
func (t *stubTransport) Unidirectional() bool    { return false }
func (t *stubTransport) WriteFrame([]byte) error { return nil }
func (t *stubTransport) Close(*Disconnect) error { return nil }
func (t *stubTransport) Session() string         { return t.session }

func TestClientFilterMatch(t *testing.T) {
	n, err := NewNode(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ws := n.NewClient(t.Context(), &stubTransport{})
	emulated := n.NewClient(t.Context(), &stubTransport{session: "s1"})
	defer ws.Close(nil)
	defer emulated.Close(nil)
	tests := []struct {
		name   string
		f      ClientFilter
		c      *Client
		wanted bool
	}{
		{"empty filter, websocket", ClientFilter{}, ws, true},
		{"empty filter, emulated", ClientFilter{}, emulated, true},
		{"by client id", ClientFilter{ClientID: ws.ID()}, ws, true},
		{"other client id", ClientFilter{ClientID: ws.ID()}, emulated, false},
		{"by session", ClientFilter{Session: "s1"}, emulated, true},
		{"session of another connection", ClientFilter{Session: "s2"}, emulated, false},
		{"session on a connection without one", ClientFilter{Session: "s1"}, ws, false},
		{"client and session", ClientFilter{ClientID: emulated.ID(), Session: "s1"}, emulated, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.match(tt.c); got != tt.wanted {
				t.Fatalf("match = %v, want %v", got, tt.wanted)
			}
		})
	}
}
