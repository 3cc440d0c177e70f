package token_test

import (
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gyrehq/gyre/token"
)

// TestPreviousHMACSecret: during a rotation a token signed with the
// previous secret verifies, for connections and subscriptions alike, until
// the server's clock passes valid_until; a token signed with neither
// secret never does, and claims are checked as for the current secret.
func TestPreviousHMACSecret(t *testing.T) {
	const oldSecret = "old-secret"
	until := time.Unix(1_900_000_000, 0)
	v := newVerifier(t, token.Config{
		HMACSecretKey: testSecret, HMACPreviousSecretKey: oldSecret,
		HMACPreviousSecretKeyValidUntil: until, Audience: "app",
	})
	now := until.Add(-time.Hour)
	token.SetClock(v, func() time.Time { return now })
	claims := func(extra jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "42", "aud": "app", "channel": "c"}
		for k, val := range extra {
			c[k] = val
		}
		return c
	}
	oldTok := sign(t, jwt.SigningMethodHS256, []byte(oldSecret), claims(nil), nil)
	newTok := sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(nil), nil)
	otherTok := sign(t, jwt.SigningMethodHS256, []byte("another"), claims(nil), nil)
	wrongAud := sign(t, jwt.SigningMethodHS384, []byte(oldSecret), claims(jwt.MapClaims{"aud": "x"}), nil)

	for _, tok := range []string{oldTok, newTok} {
		if ct, err := v.VerifyConnectToken(tok, false); err != nil || ct.UserID != "42" {
			t.Fatalf("connect token before valid_until: %+v %v", ct, err)
		}
		if st, err := v.VerifySubscribeToken(tok, false); err != nil || st.Channel != "c" {
			t.Fatalf("subscription token before valid_until: %+v %v", st, err)
		}
	}
	for _, tok := range []string{otherTok, wrongAud} {
		if _, err := v.VerifyConnectToken(tok, false); !errors.Is(err, token.ErrInvalidToken) {
			t.Fatalf("error %v, want ErrInvalidToken", err)
		}
	}

	now = until
	if _, err := v.VerifyConnectToken(oldTok, false); !errors.Is(err, token.ErrInvalidToken) {
		t.Fatalf("previous secret at valid_until: error %v, want ErrInvalidToken", err)
	}
	if _, err := v.VerifyConnectToken(newTok, false); err != nil {
		t.Fatalf("current secret after valid_until: %v", err)
	}
}

// TestPreviousHMACSecretForever: without valid_until the previous secret
// is accepted until it is removed from the configuration.
func TestPreviousHMACSecretForever(t *testing.T) {
	v := newVerifier(t, token.Config{HMACSecretKey: testSecret, HMACPreviousSecretKey: "old"})
	token.SetClock(v, func() time.Time { return time.Unix(4_000_000_000, 0) })
	tok := sign(t, jwt.SigningMethodHS512, []byte("old"), jwt.MapClaims{"sub": "1"}, nil)
	if _, err := v.VerifyConnectToken(tok, false); err != nil {
		t.Fatal(err)
	}
}

func TestPreviousHMACSecretConfigErrors(t *testing.T) {
	for _, cfg := range []token.Config{
		{HMACPreviousSecretKey: "old"},
		{HMACSecretKey: "same", HMACPreviousSecretKey: "same"},
	} {
		if _, err := token.NewVerifier(cfg); err == nil {
			t.Errorf("NewVerifier(%+v) accepted", cfg)
		}
	}
}
