package gyretest

import (
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Token signs claims as an HS256 JWT with secret (HMACSecret when empty).
// exp defaults to an hour from now, iat to now.
func Token(claims jwt.MapClaims, secret string) (string, error) {
	if secret == "" {
		secret = HMACSecret
	}
	now := time.Now()
	all := jwt.MapClaims{"exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
	for k, v := range claims {
		all[k] = v
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, all).SignedString([]byte(secret))
}
