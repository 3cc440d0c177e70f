package token_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/token"
)

// TestInvalidTokenSaidOnce: a failure found while decoding a well-signed
// payload already says "invalid token"; the message must not repeat it.
func TestInvalidTokenSaidOnce(t *testing.T) {
	enc := base64.RawURLEncoding.EncodeToString
	signed := enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc([]byte(`[1,2]`))
	mac := hmac.New(sha256.New, []byte(testSecret))
	mac.Write([]byte(signed))
	tok := signed + "." + enc(mac.Sum(nil))

	for name, tok := range map[string]string{"payload not an object": tok, "garbage": "a.b.c", "empty": ""} {
		t.Run(name, func(t *testing.T) {
			_, err := hmacVerifier(t).VerifyConnectToken(tok, false)
			if !errors.Is(err, token.ErrInvalidToken) {
				t.Fatalf("err %v, want ErrInvalidToken", err)
			}
			if n := strings.Count(err.Error(), "invalid token"); n != 1 {
				t.Fatalf("%q says \"invalid token\" %d times, want once", err, n)
			}
		})
	}
}
