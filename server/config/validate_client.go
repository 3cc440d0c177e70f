package config

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"regexp"
)

func (v *validator) client(c *Config) {
	cl := &c.Client
	v.token("client.token", &cl.Token)
	v.token("client.subscription_token", &cl.SubscriptionToken.Token)
	if cl.PingInterval > 0 && cl.PongTimeout > 0 && cl.PongTimeout >= cl.PingInterval {
		v.fail("client.pong_timeout", "%s must be less than client.ping_interval (%s)", cl.PongTimeout, cl.PingInterval)
	}
	for i, o := range cl.AllowedOrigins {
		if o == "" {
			v.fail(fmt.Sprintf("client.allowed_origins[%d]", i), "must not be empty")
		}
	}
}

// userIDClaim is what Centrifugo accepts as a custom user ID claim.
var userIDClaim = regexp.MustCompile(`^[a-zA-Z_]+$`)

func (v *validator) token(path string, t *Token) {
	if t.UserIDClaim != "" && !userIDClaim.MatchString(t.UserIDClaim) {
		v.fail(path+".user_id_claim", "invalid claim name %q: must match %s", t.UserIDClaim, userIDClaim)
	}
	v.regex(path+".audience_regex", t.AudienceRegex)
	v.regex(path+".issuer_regex", t.IssuerRegex)
	switch {
	case t.HMACPreviousSecretKey == "":
	case t.HMACSecretKey == "":
		v.fail(path+".hmac_previous_secret_key", "set without hmac_secret_key (the secret that replaced it)")
	case t.HMACPreviousSecretKey == t.HMACSecretKey:
		v.fail(path+".hmac_previous_secret_key", "equals hmac_secret_key: a rotation moves the old secret here and sets a new hmac_secret_key")
	}
	if t.RSAPublicKey != "" {
		if _, err := ParseRSAPublicKey(t.RSAPublicKey); err != nil {
			v.fail(path+".rsa_public_key", "%v", err)
		}
	}
	if t.ECDSAPublicKey != "" {
		if _, err := ParseECDSAPublicKey(t.ECDSAPublicKey); err != nil {
			v.fail(path+".ecdsa_public_key", "%v", err)
		}
	}
	if t.JWKSPublicEndpoint != "" {
		u, err := url.Parse(t.JWKSPublicEndpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.fail(path+".jwks_public_endpoint", "must be an http or https URL, got %q", t.JWKSPublicEndpoint)
		}
	}
}

// ParseRSAPublicKey reads an RSA public key given as PEM (PKIX or PKCS #1),
// base64 of PEM, or the path of a PEM file, as client.token.rsa_public_key
// allows.
func ParseRSAPublicKey(value string) (*rsa.PublicKey, error) {
	block, err := publicKeyBlock(value)
	if err != nil {
		return nil, err
	}
	if block.Type == "RSA PUBLIC KEY" {
		k, err := x509.ParsePKCS1PublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("invalid RSA public key: %w", err)
		}
		return k, nil
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("invalid public key: %w", err)
	}
	rk, ok := k.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("not an RSA public key but %T", k)
	}
	return rk, nil
}

// ParseECDSAPublicKey reads an ECDSA public key given as PKIX PEM, base64 of
// PEM, or the path of a PEM file.
func ParseECDSAPublicKey(value string) (*ecdsa.PublicKey, error) {
	block, err := publicKeyBlock(value)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("invalid public key: %w", err)
	}
	ek, ok := k.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("not an ECDSA public key but %T", k)
	}
	return ek, nil
}

func publicKeyBlock(value string) (*pem.Block, error) {
	data, err := ReadPEM(value)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	return block, nil
}

func (v *validator) regex(path, expr string) {
	if expr == "" {
		return
	}
	if _, err := regexp.Compile(expr); err != nil {
		v.fail(path, "invalid regular expression: %v", err)
	}
}
