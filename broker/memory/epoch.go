package memory

import (
	"crypto/rand"
	"encoding/base64"
)

// newEpoch returns a short random stream epoch. Six random bytes make
// eight characters; a collision needs the same channel to lose its stream
// and draw the same 48 bits.
func newEpoch() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b[:])
}
