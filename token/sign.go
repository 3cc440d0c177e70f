package token

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// SignHMAC returns a compact JWT with the given claims, MAC'ed with secret.
// alg is HS256, HS384 or HS512. claims is anything encoding/json turns into
// an object: a map, or a struct with json tags, holding for example sub, exp
// and info. It exists for tests, tooling and the gentoken command; real
// applications mint tokens in their own backend.
func SignHMAC(alg string, secret []byte, claims any) (string, error) {
	if !slices.Contains(hmacAlgs, alg) {
		return "", fmt.Errorf("token: sign: %q is not an HMAC algorithm", alg)
	}
	if len(secret) == 0 {
		return "", errors.New("token: sign: empty secret")
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("token: sign: encode claims: %w", err)
	}
	if len(payload) == 0 || payload[0] != '{' {
		return "", fmt.Errorf("token: sign: claims must encode to a JSON object, got %T", claims)
	}
	header := `{"alg":"` + alg + `","typ":"JWT"}`
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString(payload)
	sig, err := jwt.GetSigningMethod(alg).Sign(signing, secret)
	if err != nil {
		return "", fmt.Errorf("token: sign: %w", err)
	}
	var b strings.Builder
	b.Grow(len(signing) + 1 + enc.EncodedLen(len(sig)))
	b.WriteString(signing)
	b.WriteByte('.')
	b.WriteString(enc.EncodeToString(sig))
	return b.String(), nil
}
