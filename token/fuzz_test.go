package token_test

import (
	"errors"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gyrehq/gyre/token"
)

// FuzzVerifyConnectToken feeds arbitrary strings to a Verifier that holds an
// HMAC secret. Whatever comes in, verification must not panic, every failure
// must be one of the two sentinel errors, and anything accepted must carry a
// valid MAC, which random input never does: an accepted token has to be one
// of the seeds or a token the fuzzer could only find by breaking HMAC.
func FuzzVerifyConnectToken(f *testing.F) {
	valid := map[string]bool{}
	for _, c := range []jwt.MapClaims{
		{"sub": "42"},
		{"sub": "42", "exp": 1 << 40, "info": map[string]any{"a": 1}, "channels": []string{"x"}},
		{"subs": map[string]any{"c": map[string]any{"b64data": "AAE=", "override": map[string]any{"presence": map[string]any{"value": true}}}}},
		{"exp": 1, "expire_at": 0},
		{"meta": []int{1}, "aud": []string{"a"}, "nbf": 1},
	} {
		tok := hs256(f, c)
		valid[tok] = true
		f.Add(tok)
	}
	for _, s := range []string{"", ".", "..", "a.b.c", "eyJ9.eyJ9.", noneToken("none"), noneToken("HS256")} {
		f.Add(s)
	}
	v := hmacVerifier(f)
	f.Fuzz(func(t *testing.T, s string) {
		ct, err := v.VerifyConnectToken(s, false)
		if err != nil {
			if !errors.Is(err, token.ErrInvalidToken) && !errors.Is(err, token.ErrTokenExpired) && !errors.Is(err, token.ErrTokenNotValidYet) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if !valid[s] {
			// Accepting is only legal for a correct MAC; re-sign the
			// signed part and compare to be sure.
			t.Logf("accepted %q as %+v", s, ct)
			if _, err := jwt.Parse(s, func(*jwt.Token) (any, error) { return []byte(testSecret), nil },
				jwt.WithValidMethods([]string{"HS256", "HS384", "HS512"}), jwt.WithoutClaimsValidation()); err != nil {
				t.Fatalf("accepted a token with a bad MAC: %v", err)
			}
		}
	})
}
