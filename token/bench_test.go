package token_test

import (
	"crypto/elliptic"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gyrehq/gyre/token"
)

// benchClaims look like a typical connection token.
func benchClaims() jwt.MapClaims {
	return jwt.MapClaims{
		"sub": "user-1234567", "exp": 1 << 40, "iat": 1700000000,
		"info": map[string]any{"name": "Ann", "avatar": "https://example.com/a.png"},
	}
}

func benchVerify(b *testing.B, v *token.Verifier, tok string) {
	b.Helper()
	if _, err := v.VerifyConnectToken(tok, false); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := v.VerifyConnectToken(tok, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyHS256(b *testing.B) {
	benchVerify(b, hmacVerifier(b), hs256(b, benchClaims()))
}

func BenchmarkVerifyRS256(b *testing.B) {
	v := newVerifier(b, token.Config{RSAPublicKey: pemOf(b, &rsaKey().PublicKey)})
	benchVerify(b, v, sign(b, jwt.SigningMethodRS256, rsaKey(), benchClaims(), nil))
}

func BenchmarkVerifyES256(b *testing.B) {
	v := newVerifier(b, token.Config{ECDSAPublicKey: pemOf(b, &ecKey(elliptic.P256()).PublicKey)})
	benchVerify(b, v, sign(b, jwt.SigningMethodES256, ecKey(elliptic.P256()), benchClaims(), nil))
}

func BenchmarkVerifyHS256Parallel(b *testing.B) {
	v := hmacVerifier(b)
	tok := hs256(b, benchClaims())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := v.VerifyConnectToken(tok, false); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkVerifySubscribeHS256(b *testing.B) {
	v := hmacVerifier(b)
	tok := hs256(b, jwt.MapClaims{"sub": "user-1234567", "channel": "$chat:room-1", "exp": 1 << 40})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.VerifySubscribeToken(tok, false); err != nil {
			b.Fatal(err)
		}
	}
}
