package token_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gyrehq/gyre/token"
)

const testSecret = "test-secret-of-a-reasonable-length"

// Keys are generated once per test binary: RSA generation is slow, and
// every test only needs some key it did not choose.
var (
	rsaKey   = sync.OnceValue(func() *rsa.PrivateKey { return must(rsa.GenerateKey(rand.Reader, 2048)) })
	rsaOther = sync.OnceValue(func() *rsa.PrivateKey { return must(rsa.GenerateKey(rand.Reader, 2048)) })
	ecKeys   = sync.OnceValue(func() map[elliptic.Curve]*ecdsa.PrivateKey {
		m := map[elliptic.Curve]*ecdsa.PrivateKey{}
		for _, c := range []elliptic.Curve{elliptic.P256(), elliptic.P384(), elliptic.P521()} {
			m[c] = must(ecdsa.GenerateKey(c, rand.Reader))
		}
		return m
	})
	ecOther = sync.OnceValue(func() *ecdsa.PrivateKey { return must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader)) })
	edKey   = sync.OnceValue(func() ed25519.PrivateKey {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	})
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func ecKey(c elliptic.Curve) *ecdsa.PrivateKey { return ecKeys()[c] }

// pemOf encodes a public key as a PKIX PEM block, as config files hold it.
func pemOf(t testing.TB, pub any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// sign makes a token with golang-jwt, a signer independent of SignHMAC.
func sign(t testing.TB, method jwt.SigningMethod, key any, claims jwt.MapClaims, header map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", method.Alg(), err)
	}
	return s
}

func hs256(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	return sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims, nil)
}

func newVerifier(t testing.TB, cfg token.Config) *token.Verifier {
	t.Helper()
	v, err := token.NewVerifier(cfg)
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	return v
}

func hmacVerifier(t testing.TB) *token.Verifier {
	t.Helper()
	return newVerifier(t, token.Config{HMACSecretKey: testSecret})
}

func inHour() int64  { return time.Now().Add(time.Hour).Unix() }
func hourAgo() int64 { return time.Now().Add(-time.Hour).Unix() }
