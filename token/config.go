package token

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Config says which keys and claims a Verifier accepts. Its zero value is
// valid but accepts no token at all. The fields mirror the client.token.*
// keys of the server configuration.
type Config struct {
	// HMACSecretKey enables HS256/384/512 with this shared secret. Empty:
	// HMAC tokens are refused.
	HMACSecretKey string
	// HMACPreviousSecretKey is the secret HMACSecretKey replaced: tokens
	// signed with it are still accepted, so that rotating the secret does
	// not refuse every token handed out before. Empty: only the current
	// secret is accepted.
	HMACPreviousSecretKey string
	// HMACPreviousSecretKeyValidUntil ends the acceptance of the previous
	// secret at this time (by the server's clock, not by a claim that
	// whoever holds the old secret could choose). Zero: no end.
	HMACPreviousSecretKeyValidUntil time.Time
	// MaxLength is the longest token accepted, in bytes; longer ones are
	// refused before any decoding. 0 means DefaultMaxTokenLength.
	MaxLength int
	// InsecureSkipSignatureVerify accepts tokens without checking their
	// signature (the claims are still checked): for development and tests
	// only, where anyone can then connect as anyone. It works without any
	// key configured.
	InsecureSkipSignatureVerify bool
	// RSAPublicKey is a PEM public key (PKIX, PKCS#1 or a certificate) that
	// enables RS256/384/512 and PS256/384/512. Empty: refused.
	RSAPublicKey string
	// ECDSAPublicKey is a PEM public key (PKIX or a certificate) that enables
	// the ES algorithm of its curve: ES256 for P-256, ES384 for P-384, ES512
	// for P-521. Empty: refused.
	ECDSAPublicKey string

	// Audience, when set, must be one of the token's aud values.
	Audience string
	// AudienceRegex, when set, must match one of the token's aud values. It
	// is unanchored, as Go's regexp.MatchString is: write ^...$ for an exact
	// match. Its named groups may feed JWKSPublicEndpoint. Exclusive with
	// Audience.
	AudienceRegex string
	// Issuer, when set, must equal the token's iss.
	Issuer string
	// IssuerRegex, when set, must match the token's iss (unanchored, like
	// AudienceRegex). Its named groups may feed JWKSPublicEndpoint. Exclusive
	// with Issuer.
	IssuerRegex string

	// UserIDClaim names the claim that holds the user id, in connection and
	// subscription tokens alike. Empty means "sub". It must match
	// ^[a-zA-Z_]+$ and the claim's value must be a string.
	UserIDClaim string

	// JWKSPublicEndpoint is an http(s) URL serving a JSON Web Key Set. When
	// set, tokens are verified only with its keys, looked up by kid, and the
	// static keys above are ignored. It may contain {{name}} variables filled
	// from the named groups of IssuerRegex or AudienceRegex.
	JWKSPublicEndpoint string
}

var userIDClaimRe = regexp.MustCompile(`^[a-zA-Z_]+$`)

// NewVerifier checks cfg and builds a Verifier from it. Errors name the
// offending field.
func NewVerifier(cfg Config) (*Verifier, error) {
	v := &Verifier{
		audience:      cfg.Audience,
		issuer:        cfg.Issuer,
		userIDClaim:   cfg.UserIDClaim,
		skipSignature: cfg.InsecureSkipSignatureVerify,
		maxLength:     cfg.MaxLength,
	}
	if v.maxLength <= 0 {
		v.maxLength = DefaultMaxTokenLength
	}
	if cfg.HMACSecretKey != "" {
		v.hmacKey = []byte(cfg.HMACSecretKey)
	}
	if err := v.loadPEMKeys(cfg); err != nil {
		return nil, err
	}
	if err := v.compileClaimChecks(cfg); err != nil {
		return nil, err
	}
	if cfg.JWKSPublicEndpoint != "" {
		j, err := newJWKS(cfg.JWKSPublicEndpoint, v.issuerRe, v.audienceRe)
		if err != nil {
			return nil, fmt.Errorf("token: Config.JWKSPublicEndpoint: %w", err)
		}
		v.jwks = j
	}
	v.parser = newParser(v.acceptedAlgs())
	if v.hmacKey != nil && v.jwks == nil {
		v.hmacFast = newFastHMAC(v.hmacKey)
	}
	if cfg.HMACPreviousSecretKey != "" {
		if cfg.HMACSecretKey == "" {
			return nil, errors.New("token: Config.HMACPreviousSecretKey needs Config.HMACSecretKey (the key that replaced it)")
		}
		if cfg.HMACPreviousSecretKey == cfg.HMACSecretKey {
			return nil, errors.New("token: Config.HMACPreviousSecretKey equals Config.HMACSecretKey")
		}
		// The previous key checks the same claims; it only signs differently.
		prev := cfg
		prev.HMACSecretKey, prev.HMACPreviousSecretKey = cfg.HMACPreviousSecretKey, ""
		prev.RSAPublicKey, prev.ECDSAPublicKey, prev.JWKSPublicEndpoint = "", "", ""
		pv, err := NewVerifier(prev)
		if err != nil {
			return nil, err
		}
		v.previous, v.previousUntil = pv, cfg.HMACPreviousSecretKeyValidUntil
	}
	return v, nil
}

func (v *Verifier) loadPEMKeys(cfg Config) error {
	if cfg.RSAPublicKey != "" {
		k, err := parseRSAPublicKey(cfg.RSAPublicKey)
		if err != nil {
			return fmt.Errorf("token: Config.RSAPublicKey: %w", err)
		}
		v.rsaKey = k
	}
	if cfg.ECDSAPublicKey != "" {
		k, err := parseECDSAPublicKey(cfg.ECDSAPublicKey)
		if err != nil {
			return fmt.Errorf("token: Config.ECDSAPublicKey: %w", err)
		}
		alg, err := ecdsaAlgForCurve(k.Curve)
		if err != nil {
			return fmt.Errorf("token: Config.ECDSAPublicKey: %w", err)
		}
		v.ecdsaKey, v.ecdsaAlg = k, alg
	}
	return nil
}

func (v *Verifier) compileClaimChecks(cfg Config) error {
	if cfg.Audience != "" && cfg.AudienceRegex != "" {
		return errors.New("token: Config.Audience and Config.AudienceRegex are exclusive")
	}
	if cfg.Issuer != "" && cfg.IssuerRegex != "" {
		return errors.New("token: Config.Issuer and Config.IssuerRegex are exclusive")
	}
	if cfg.UserIDClaim != "" && !userIDClaimRe.MatchString(cfg.UserIDClaim) {
		return fmt.Errorf("token: Config.UserIDClaim: %q must match %s", cfg.UserIDClaim, userIDClaimRe)
	}
	var err error
	if cfg.AudienceRegex != "" {
		if v.audienceRe, err = regexp.Compile(cfg.AudienceRegex); err != nil {
			return fmt.Errorf("token: Config.AudienceRegex: %w", err)
		}
	}
	if cfg.IssuerRegex != "" {
		if v.issuerRe, err = regexp.Compile(cfg.IssuerRegex); err != nil {
			return fmt.Errorf("token: Config.IssuerRegex: %w", err)
		}
	}
	return nil
}

// pemPublicKey decodes the first PEM block of s into a public key.
func pemPublicKey(s string) (any, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	switch block.Type {
	case "PUBLIC KEY":
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse PKIX public key: %w", err)
		}
		return k, nil
	case "RSA PUBLIC KEY":
		k, err := x509.ParsePKCS1PublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse PKCS#1 public key: %w", err)
		}
		return k, nil
	case "CERTIFICATE":
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		return c.PublicKey, nil
	default:
		return nil, fmt.Errorf("PEM block %q is not a public key", block.Type)
	}
}

func parseRSAPublicKey(s string) (*rsa.PublicKey, error) {
	k, err := pemPublicKey(s)
	if err != nil {
		return nil, err
	}
	rk, ok := k.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("key is %T, not an RSA public key", k)
	}
	return rk, nil
}

func parseECDSAPublicKey(s string) (*ecdsa.PublicKey, error) {
	k, err := pemPublicKey(s)
	if err != nil {
		return nil, err
	}
	ek, ok := k.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("key is %T, not an ECDSA public key", k)
	}
	return ek, nil
}

// ecdsaAlgForCurve returns the one ES algorithm a key on curve may verify
// (RFC 7518 section 3.4 ties each to its curve).
func ecdsaAlgForCurve(c elliptic.Curve) (string, error) {
	switch c {
	case elliptic.P256():
		return "ES256", nil
	case elliptic.P384():
		return "ES384", nil
	case elliptic.P521():
		return "ES512", nil
	default:
		return "", fmt.Errorf("unsupported curve %s", c.Params().Name)
	}
}
