package token_test

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gyrehq/gyre/token"
)

// TestInsecureSkipSignatureVerify: with the switch on, a token signed
// with any key (or with a key Gyre does not have) is accepted, its claims
// still checked; without it the same token is refused.
func TestInsecureSkipSignatureVerify(t *testing.T) {
	other := sign(t, jwt.SigningMethodHS256, []byte("not the server's secret"), jwt.MapClaims{"sub": "mallory"}, nil)
	expired := sign(t, jwt.SigningMethodHS256, []byte("any"), jwt.MapClaims{"sub": "m", "exp": time.Now().Add(-time.Hour).Unix()}, nil)

	strict := newVerifier(t, token.Config{HMACSecretKey: testSecret})
	if _, err := strict.VerifyConnectToken(other, false); err == nil {
		t.Fatal("a token signed with another key was accepted")
	}
	for _, cfg := range []token.Config{
		{HMACSecretKey: testSecret, InsecureSkipSignatureVerify: true},
		{InsecureSkipSignatureVerify: true}, // no key at all
	} {
		v := newVerifier(t, cfg)
		ct, err := v.VerifyConnectToken(other, false)
		if err != nil || ct.UserID != "mallory" {
			t.Fatalf("skip (key %q): %+v, %v; want user mallory", cfg.HMACSecretKey, ct, err)
		}
		if _, err := v.VerifyConnectToken(expired, false); err == nil {
			t.Fatalf("skip (key %q): an expired token was accepted", cfg.HMACSecretKey)
		}
		if _, err := v.VerifyConnectToken("not.a.token", false); err == nil {
			t.Fatalf("skip (key %q): garbage was accepted", cfg.HMACSecretKey)
		}
	}
}
