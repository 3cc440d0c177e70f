package token

import (
	"errors"
	"fmt"
)

// Errors returned by verification. Callers branch on them with errors.Is: an
// expired connection token asks the client to refresh (error 109), an invalid
// one closes the connection (disconnect 3500).
var (
	// ErrInvalidToken is wrapped by every verification failure other than
	// expiry; the wrapping error says what was wrong.
	ErrInvalidToken = errors.New("token: invalid token")
	// ErrTokenExpired means the signature and claims are good but exp has
	// passed.
	ErrTokenExpired = errors.New("token: token expired")
)

// invalid wraps ErrInvalidToken with a reason.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidToken, fmt.Sprintf(format, args...))
}
