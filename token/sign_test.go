package token_test

import (
	"testing"

	"github.com/gyrehq/gyre/token"
)

func TestSignHMAC(t *testing.T) {
	type claims struct {
		Sub     string `json:"sub"`
		Channel string `json:"channel"`
	}
	for _, alg := range []string{"HS256", "HS384", "HS512"} {
		t.Run(alg, func(t *testing.T) {
			tok, err := token.SignHMAC(alg, []byte(testSecret), claims{Sub: "42", Channel: "c"})
			if err != nil {
				t.Fatal(err)
			}
			st, err := hmacVerifier(t).VerifySubscribeToken(tok, false)
			if err != nil || st.UserID != "42" || st.Channel != "c" {
				t.Fatalf("verify: %+v, %v", st, err)
			}
		})
	}
}

func TestSignHMACErrors(t *testing.T) {
	tests := []struct {
		name   string
		alg    string
		secret []byte
		claims any
	}{
		{"RSA alg", "RS256", []byte("s"), map[string]any{}},
		{"none", "none", []byte("s"), map[string]any{}},
		{"empty secret", "HS256", nil, map[string]any{}},
		{"claims not an object", "HS256", []byte("s"), []string{"sub"}},
		{"claims not encodable", "HS256", []byte("s"), map[string]any{"f": func() {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := token.SignHMAC(tt.alg, tt.secret, tt.claims); err == nil {
				t.Fatal("SignHMAC succeeded")
			}
		})
	}
}
