package token

import "time"

// SetJWKSRefreshInterval lets tests see a rotated key set without waiting.
func SetJWKSRefreshInterval(v *Verifier, d time.Duration) {
	v.jwks.refreshInterval = d
}
