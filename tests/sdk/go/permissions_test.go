package sdk

import (
	"errors"
	"testing"

	"github.com/centrifugal/centrifuge-go"
	"github.com/golang-jwt/jwt/v5"
)

// TestRefusedSubscriptions: a refused subscription ends unsubscribed with
// the refusal's code and costs the connection nothing. A subscription
// token that does not verify (malformed, signed with another key) is 103,
// as permission denied.
func TestRefusedSubscriptions(t *testing.T) {
	cases := []struct {
		name  string
		ch    string
		token func(t *testing.T, ch string) string
		code  uint32
	}{
		{name: "private namespace without token", ch: channel("private:"), code: 103},
		{name: "unknown namespace", ch: "nope:" + channel(""), code: 102},
		{
			name: "token signed with another key", ch: channel("private:tok-"), code: 103,
			token: func(t *testing.T, ch string) string {
				return token(t, jwt.MapClaims{"sub": "alice", "channel": ch}, "not-the-server-secret-0123456789abcdef")
			},
		},
		{
			name: "malformed token", ch: channel("private:tok-"), code: 103,
			token: func(*testing.T, string) string { return "not-a-jwt" },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eachCodec(t, func(t *testing.T, cd codec) {
				c := newClient(t, cd, clientOptions{user: "alice"})
				c.connect(t)
				var config centrifuge.SubscriptionConfig
				if tc.token != nil {
					config.Token = tc.token(t, tc.ch)
				}
				s := newSub(t, c, tc.ch, config)
				if err := s.Subscribe(); err != nil {
					t.Fatalf("subscribe: %v", err)
				}
				ev := s.unsubscribed.wait(t, 0, nil)
				if ev.Code != tc.code {
					t.Fatalf("unsubscribed with %+v, want code %d", ev, tc.code)
				}
				if got := s.subscribed.since(0); len(got) != 0 {
					t.Fatalf("subscribed as well: %s", show(got))
				}
				if st := c.State(); st != centrifuge.StateConnected {
					t.Fatalf("client state %s: a refused subscription must not cost the connection", st)
				}
			})
		})
	}
}

// TestTokenOfAnotherChannelOrUserDisconnects3500: a well-signed
// subscription token made for another channel or another user is an
// invalid token, as for the connection: disconnect 3500, no reconnect.
func TestTokenOfAnotherChannelOrUserDisconnects3500(t *testing.T) {
	cases := []struct {
		name   string
		claims func(ch string) jwt.MapClaims
	}{
		{"another channel", func(ch string) jwt.MapClaims { return jwt.MapClaims{"sub": "alice", "channel": ch + "-other"} }},
		{"another user", func(ch string) jwt.MapClaims { return jwt.MapClaims{"sub": "mallory", "channel": ch} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eachCodec(t, func(t *testing.T, cd codec) {
				c := newClient(t, cd, clientOptions{user: "alice"})
				c.connect(t)
				ch := channel("private:tok-")
				s := newSub(t, c, ch, centrifuge.SubscriptionConfig{Token: token(t, tc.claims(ch), "")})
				if err := s.Subscribe(); err != nil {
					t.Fatalf("subscribe: %v", err)
				}
				c.disconnectedForGood(t, 3500)
				if got := s.subscribed.since(0); len(got) != 0 {
					t.Fatalf("subscribed with a token of %s: %s", tc.name, show(got))
				}
			})
		})
	}
}

func TestPrivateChannelWithItsToken(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		c := newClient(t, cd, clientOptions{user: "dave"})
		c.connect(t)
		ch := channel("private:tok-")
		s := newSub(t, c, ch, centrifuge.SubscriptionConfig{
			Token: token(t, jwt.MapClaims{"sub": "dave", "channel": ch}, ""),
		})
		s.subscribe(t)
		publish(t, ch, map[string]any{"secret": true})
		ev := s.pubs.wait(t, 0, nil)
		sameJSON(t, "publication", ev.Data, map[string]any{"secret": true})
	})
}

func TestPublishWithoutPermissionRefused103(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		c := newClient(t, cd, clientOptions{})
		c.connect(t)
		// Subscribing is allowed without a namespace, publishing is not.
		s := newSub(t, c, channel("open-"), centrifuge.SubscriptionConfig{})
		s.subscribe(t)
		var replyErr *centrifuge.Error
		_, err := s.Publish(ctx(t), []byte(`{"x":1}`))
		if !errors.As(err, &replyErr) || replyErr.Code != 103 {
			t.Fatalf("publish into a channel without publish permission: %v, want error 103", err)
		}
		// In "chat" publishing needs a subscription first.
		_, err = c.Publish(ctx(t), channel("chat:nosub-"), []byte(`{"x":1}`))
		if !errors.As(err, &replyErr) || replyErr.Code != 103 {
			t.Fatalf("publish into chat without a subscription: %v, want error 103", err)
		}
	})
}
