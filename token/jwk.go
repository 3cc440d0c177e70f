package token

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"

	"github.com/golang-jwt/jwt/v5"
)

// jwk is one JSON Web Key (RFC 7517) as served by a key set endpoint; only the
// members needed for public signature keys are read.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// publicKey is a parsed key plus what it may verify.
type publicKey struct {
	key any    // *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey
	alg string // the JWK's alg member; "" allows the key's whole family
	es  string // for EC keys, the ES algorithm of the curve
}

// parse turns the JWK into a public key.
func (k jwk) parse() (publicKey, error) {
	pk := publicKey{alg: k.Alg}
	var err error
	switch k.Kty {
	case "RSA":
		pk.key, err = k.rsa()
	case "EC":
		var ek *ecdsa.PublicKey
		if ek, err = k.ecdsa(); err == nil {
			pk.key = ek
			pk.es, err = ecdsaAlgForCurve(ek.Curve)
		}
	case "OKP":
		pk.key, err = k.ed25519()
	default:
		err = fmt.Errorf("unsupported kty %q", k.Kty)
	}
	return pk, err
}

func (k jwk) rsa() (*rsa.PublicKey, error) {
	n, err := b64url(k.N, "n")
	if err != nil {
		return nil, err
	}
	e, err := b64url(k.E, "e")
	if err != nil {
		return nil, err
	}
	if len(n) == 0 || len(e) == 0 || len(e) > 4 {
		return nil, errors.New("bad RSA modulus or exponent size")
	}
	exp := new(big.Int).SetBytes(e).Int64()
	if exp < 3 || exp%2 == 0 {
		return nil, fmt.Errorf("bad RSA exponent %d", exp)
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(exp)}, nil
}

func (k jwk) ecdsa() (*ecdsa.PublicKey, error) {
	var curve elliptic.Curve
	switch k.Crv {
	case "P-256":
		curve = elliptic.P256()
	case "P-384":
		curve = elliptic.P384()
	case "P-521":
		curve = elliptic.P521()
	default:
		return nil, fmt.Errorf("unsupported EC curve %q", k.Crv)
	}
	x, err := b64url(k.X, "x")
	if err != nil {
		return nil, err
	}
	y, err := b64url(k.Y, "y")
	if err != nil {
		return nil, err
	}
	size := (curve.Params().BitSize + 7) / 8
	if len(x) > size || len(y) > size {
		return nil, errors.New("EC coordinate too long")
	}
	// Uncompressed SEC 1 point: 0x04 || X || Y, each left-padded to size.
	point := make([]byte, 1+2*size)
	point[0] = 4
	copy(point[1+size-len(x):1+size], x)
	copy(point[1+2*size-len(y):], y)
	pub, err := ecdsa.ParseUncompressedPublicKey(curve, point)
	if err != nil {
		return nil, fmt.Errorf("EC point: %w", err)
	}
	return pub, nil
}

func (k jwk) ed25519() (ed25519.PublicKey, error) {
	if k.Crv != "Ed25519" {
		return nil, fmt.Errorf("unsupported OKP curve %q", k.Crv)
	}
	x, err := b64url(k.X, "x")
	if err != nil {
		return nil, err
	}
	if len(x) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("Ed25519 key is %d bytes", len(x))
	}
	return ed25519.PublicKey(x), nil
}

func b64url(s, member string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("member %q: %w", member, err)
	}
	return b, nil
}

// accepts reports whether the key may verify a token signed with method.
// Each key type serves only its own family, so an RSA key's modulus can
// never become an HMAC secret.
func (pk publicKey) accepts(method jwt.SigningMethod) error {
	alg := method.Alg()
	if pk.alg != "" && pk.alg != alg {
		return fmt.Errorf("token: key is for %s, token uses %s", pk.alg, alg)
	}
	ok := false
	switch pk.key.(type) {
	case *rsa.PublicKey:
		switch method.(type) {
		case *jwt.SigningMethodRSA, *jwt.SigningMethodRSAPSS:
			ok = true
		}
	case *ecdsa.PublicKey:
		_, isEC := method.(*jwt.SigningMethodECDSA)
		ok = isEC && alg == pk.es
	case ed25519.PublicKey:
		_, ok = method.(*jwt.SigningMethodEd25519)
	}
	if !ok {
		return fmt.Errorf("token: %T key cannot verify %s", pk.key, alg)
	}
	return nil
}
