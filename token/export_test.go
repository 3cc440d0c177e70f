package token

import "time"

// SetJWKSRefreshInterval lets tests see a rotated key set without waiting.
func SetJWKSRefreshInterval(v *Verifier, d time.Duration) {
	v.jwks.refreshInterval = d
}

// WithoutFastHMAC returns a copy of v that leaves HMAC tokens to
// golang-jwt, to compare the two paths.
func WithoutFastHMAC(v *Verifier) *Verifier {
	c := *v
	c.hmacFast = nil
	return &c
}

// SetClock makes v read the time from now.
func SetClock(v *Verifier, now func() time.Time) {
	v.now = now
}
