package token_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/token"
)

func TestNewVerifierErrors(t *testing.T) {
	p224 := must(ecdsa.GenerateKey(elliptic.P224(), rand.Reader))
	rsaPEM := pemOf(t, &rsaKey().PublicKey)
	ecPEM := pemOf(t, &ecKey(elliptic.P256()).PublicKey)
	privPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY",
		Bytes: must(x509.MarshalPKCS8PrivateKey(rsaKey()))}))
	tests := []struct {
		name, wantField string
		cfg             token.Config
	}{
		{"RSA not PEM", "RSAPublicKey", token.Config{RSAPublicKey: "MIIBIjANBg"}},
		{"RSA bad DER", "RSAPublicKey", token.Config{RSAPublicKey: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"}},
		{"RSA field holds EC key", "RSAPublicKey", token.Config{RSAPublicKey: ecPEM}},
		{"RSA field holds private key", "RSAPublicKey", token.Config{RSAPublicKey: privPEM}},
		{"ECDSA field holds RSA key", "ECDSAPublicKey", token.Config{ECDSAPublicKey: rsaPEM}},
		{"ECDSA curve P-224", "ECDSAPublicKey", token.Config{ECDSAPublicKey: pemOf(t, &p224.PublicKey)}},
		{"audience twice", "AudienceRegex", token.Config{Audience: "a", AudienceRegex: "a"}},
		{"issuer twice", "IssuerRegex", token.Config{Issuer: "a", IssuerRegex: "a"}},
		{"bad audience regex", "AudienceRegex", token.Config{AudienceRegex: "("}},
		{"bad issuer regex", "IssuerRegex", token.Config{IssuerRegex: "[z-a]"}},
		{"bad user id claim", "UserIDClaim", token.Config{UserIDClaim: "user.id"}},
		{"jwks not http", "JWKSPublicEndpoint", token.Config{JWKSPublicEndpoint: "file:///etc/keys"}},
		{"jwks no host", "JWKSPublicEndpoint", token.Config{JWKSPublicEndpoint: "https:///certs"}},
		{"jwks unknown variable", "JWKSPublicEndpoint", token.Config{
			JWKSPublicEndpoint: "https://idp/{{tenant}}/certs", IssuerRegex: `(?P<realm>\w+)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := token.NewVerifier(tt.cfg)
			if err == nil {
				t.Fatal("NewVerifier accepted a bad config")
			}
			if !strings.HasPrefix(err.Error(), "token: ") || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("error %q should start with token: and name %s", err, tt.wantField)
			}
		})
	}
}

func TestNewVerifierAcceptsKeyForms(t *testing.T) {
	pub := &rsaKey().PublicKey
	pkcs1 := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(pub)}))
	tests := []struct {
		name string
		cfg  token.Config
	}{
		{"zero", token.Config{}},
		{"RSA PKIX", token.Config{RSAPublicKey: pemOf(t, pub)}},
		{"RSA PKCS#1", token.Config{RSAPublicKey: pkcs1}},
		{"ECDSA P-384", token.Config{ECDSAPublicKey: pemOf(t, &ecKey(elliptic.P384()).PublicKey)}},
		{"JWKS template", token.Config{
			JWKSPublicEndpoint: "https://idp/{{realm}}/certs", IssuerRegex: `(?P<realm>\w+)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := token.NewVerifier(tt.cfg); err != nil {
				t.Fatal(err)
			}
		})
	}
}
