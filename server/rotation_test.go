package server

import (
	"testing"
	"time"
)

// TestHMACKeyRotation: with client.token.hmac_previous_secret_key, a
// connection token signed with the replaced secret still connects until
// hmac_previous_secret_key_valid_until; after it, the token is refused
// (3500) while tokens of the current secret connect.
func TestHMACKeyRotation(t *testing.T) {
	const oldSecret = "rotated-out-secret"
	for _, tc := range []struct {
		name  string
		until int64
		want  int // close code; 0: connected
	}{
		{"within the window", time.Now().Add(time.Hour).Unix(), 0},
		{"no end", 0, 0},
		{"window over", time.Now().Add(-time.Second).Unix(), 3500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig()
			c.Client.Token.HMACPreviousSecretKey = oldSecret
			c.Client.Token.HMACPreviousSecretKeyValidUntil = tc.until
			_, base := newServer(t, c)
			if _, closed := dial(t, base).connect(signToken(t, oldSecret, "42")); closed != tc.want {
				t.Fatalf("token of the previous secret: closed %d, want %d", closed, tc.want)
			}
			if _, closed := dial(t, base).connect(signToken(t, testSecret, "42")); closed != 0 {
				t.Fatalf("token of the current secret: closed %d", closed)
			}
			if _, closed := dial(t, base).connect(signToken(t, "neither", "42")); closed != 3500 {
				t.Fatalf("token of another secret: closed %d, want 3500", closed)
			}
		})
	}
}
