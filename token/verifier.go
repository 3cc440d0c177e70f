package token

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// DefaultMaxTokenLength is the longest token string accepted, in bytes,
// unless Config.MaxLength says otherwise. Longer ones
// are refused before decoding so that junk costs nothing; real tokens, even
// with many channels, stay far below it.
const DefaultMaxTokenLength = 64 << 10

// Verifier checks tokens against one immutable set of keys and rules.
// Build it with NewVerifier; it is safe for concurrent use.
type Verifier struct {
	parser *jwt.Parser

	hmacKey  []byte
	rsaKey   *rsa.PublicKey
	ecdsaKey *ecdsa.PublicKey
	ecdsaAlg string // the ES variant matching ecdsaKey's curve
	jwks     *jwks  // nil unless a JWKS endpoint is configured
	// hmacFast checks HMAC tokens without golang-jwt's generic parsing
	// (hmacfast.go); nil without an HMAC secret.
	hmacFast *fastHMAC
	// skipSignature accepts any signature (Config.InsecureSkipSignatureVerify).
	skipSignature bool
	// maxLength is Config.MaxLength, or its default.
	maxLength int

	audience, issuer     string
	audienceRe, issuerRe *regexp.Regexp
	userIDClaim          string

	// previous verifies HMAC tokens signed with the secret the current one
	// replaced, until previousUntil (zero: for ever); nil without one.
	previous      *Verifier
	previousUntil time.Time
	now           func() time.Time // time.Now; tests move it
}

var (
	hmacAlgs  = []string{"HS256", "HS384", "HS512"}
	rsaAlgs   = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	ecdsaAlgs = []string{"ES256", "ES384", "ES512"}
)

// acceptedAlgs lists the algorithms for which the Verifier holds a key. The
// parser refuses every other alg before any key is looked up.
func (v *Verifier) acceptedAlgs() []string {
	if v.jwks != nil {
		return slices.Concat(rsaAlgs, ecdsaAlgs, []string{"EdDSA"})
	}
	var algs []string
	if v.hmacKey != nil {
		algs = append(algs, hmacAlgs...)
	}
	if v.rsaKey != nil {
		algs = append(algs, rsaAlgs...)
	}
	if v.ecdsaKey != nil {
		algs = append(algs, v.ecdsaAlg)
	}
	return algs
}

func newParser(algs []string) *jwt.Parser {
	// An empty list would mean "any algorithm" to jwt; a sentinel that no
	// signing method carries keeps "no keys" meaning "no tokens".
	if len(algs) == 0 {
		algs = []string{"-"}
	}
	// Claims are checked by Verifier.checkClaims so that expiry can be
	// skipped on request and reported apart from other failures.
	return jwt.NewParser(jwt.WithValidMethods(algs), jwt.WithoutClaimsValidation())
}

// keyFunc hands jwt the key for the token's algorithm family. The parser has
// already limited alg to acceptedAlgs; the family switch is kept as a second
// guard so that a key can never serve an algorithm of another family.
func (v *Verifier) keyFunc(t *jwt.Token) (any, error) {
	if v.jwks != nil {
		return v.jwks.keyFor(t)
	}
	alg := t.Method.Alg()
	switch t.Method.(type) {
	case *jwt.SigningMethodHMAC:
		if v.hmacKey != nil {
			return v.hmacKey, nil
		}
	case *jwt.SigningMethodRSA, *jwt.SigningMethodRSAPSS:
		if v.rsaKey != nil {
			return v.rsaKey, nil
		}
	case *jwt.SigningMethodECDSA:
		if v.ecdsaKey != nil && alg == v.ecdsaAlg {
			return v.ecdsaKey, nil
		}
	}
	return nil, fmt.Errorf("token: no key configured for %s", alg)
}

// verify checks the signature of token, decodes its payload into claims and
// validates the registered claims in reg (part of claims).
func (v *Verifier) verify(token string, claims jwt.Claims, reg *jwt.RegisteredClaims, skipExpiry bool) error {
	if token == "" {
		return invalid("empty token")
	}
	if len(token) > v.maxLength {
		return invalid("token is %d bytes, limit %d", len(token), v.maxLength)
	}
	err := v.verifySignature(token, claims)
	if err != nil && v.previous != nil && v.previousAccepted() {
		if v.previous.verifySignature(token, claims) == nil {
			err = nil
		}
	}
	if err != nil {
		return err
	}
	return v.checkClaims(reg, v.clock(), skipExpiry)
}

// previousAccepted reports whether the previous HMAC secret still verifies
// tokens.
func (v *Verifier) previousAccepted() bool {
	return v.previousUntil.IsZero() || v.clock().Before(v.previousUntil)
}

func (v *Verifier) clock() time.Time {
	if v.now != nil {
		return v.now()
	}
	return time.Now()
}

// verifySignature checks the signature of token and decodes its payload
// into claims.
func (v *Verifier) verifySignature(token string, claims jwt.Claims) error {
	if v.skipSignature {
		if _, _, err := v.parser.ParseUnverified(token, claims); err != nil {
			return wrapInvalid(err)
		}
		return nil
	}
	handled := false
	if v.hmacFast != nil {
		var err error
		if handled, err = v.hmacFast.verify(token, claims); err != nil {
			return wrapInvalid(err)
		}
	}
	if !handled {
		if _, err := v.parser.ParseWithClaims(token, claims, v.keyFunc); err != nil {
			return wrapInvalid(err)
		}
	}
	return nil
}

// checkClaims validates audience, issuer and time. The time checks come
// last so that ErrTokenExpired and ErrTokenNotValidYet mean "signed for us,
// but not for now", which waiting or a fresh token can fix; a forged token,
// or one for another audience or issuer, is invalid whatever its time. A token both expired and not yet valid (nbf
// after exp) is reported expired: only a new token helps it.
func (v *Verifier) checkClaims(reg *jwt.RegisteredClaims, now time.Time, skipExpiry bool) error {
	if err := v.checkAudience(reg.Audience); err != nil {
		return err
	}
	if err := v.checkIssuer(reg.Issuer); err != nil {
		return err
	}
	if !skipExpiry && reg.ExpiresAt != nil && now.After(reg.ExpiresAt.Time) {
		return fmt.Errorf("%w: exp %d is in the past", ErrTokenExpired, reg.ExpiresAt.Unix())
	}
	if reg.NotBefore != nil && now.Before(reg.NotBefore.Time) {
		return fmt.Errorf("%w: nbf %d is in the future", ErrTokenNotValidYet, reg.NotBefore.Unix())
	}
	return nil
}

func (v *Verifier) checkAudience(aud jwt.ClaimStrings) error {
	switch {
	case v.audience != "":
		if !slices.Contains(aud, v.audience) {
			return invalid("audience %q not in aud %q", v.audience, []string(aud))
		}
	case v.audienceRe != nil:
		if !slices.ContainsFunc(aud, v.audienceRe.MatchString) {
			return invalid("no aud in %q matches %s", []string(aud), v.audienceRe)
		}
	}
	return nil
}

func (v *Verifier) checkIssuer(iss string) error {
	switch {
	case v.issuer != "":
		if iss != v.issuer {
			return invalid("iss %q is not %q", iss, v.issuer)
		}
	case v.issuerRe != nil:
		if !v.issuerRe.MatchString(iss) {
			return invalid("iss %q does not match %s", iss, v.issuerRe)
		}
	}
	return nil
}

// wrapInvalid marks err as ErrInvalidToken, once: an error that already
// wraps it (the payload checks call invalid) is returned as it is, so that
// a message never reads "token: invalid token: token: invalid token: ...".
func wrapInvalid(err error) error {
	if errors.Is(err, ErrInvalidToken) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrInvalidToken, err)
}
