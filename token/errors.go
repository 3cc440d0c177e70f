package token

import (
	"errors"
	"fmt"
)

// Errors returned by verification. Callers branch on them with errors.Is.
// Every error wraps exactly one of them, so that a caller can tell a token
// that is wrong, and will stay wrong, from one that is only used at the wrong
// time: an expired connection token asks the client to refresh (error 109),
// an invalid one closes the connection (disconnect 3500).
var (
	// ErrInvalidToken is wrapped by every verification failure other than
	// the time checks below: malformed, badly signed, an algorithm without
	// a key, the wrong audience or issuer, a bad claim. The wrapping error
	// says what was wrong.
	ErrInvalidToken = errors.New("token: invalid token")
	// ErrTokenExpired means the signature, audience and issuer are good
	// but exp has passed.
	ErrTokenExpired = errors.New("token: token expired")
	// ErrTokenNotValidYet means the signature, audience and issuer are
	// good but nbf is still ahead. Like an expired token, it may be good a little later
	// or after a refresh, so it does not wrap ErrInvalidToken.
	ErrTokenNotValidYet = errors.New("token: token not valid yet")
)

// invalid wraps ErrInvalidToken with a reason.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidToken, fmt.Sprintf(format, args...))
}
