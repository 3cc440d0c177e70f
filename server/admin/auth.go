package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// A session token is "v1.<expiry, Unix seconds>.<MAC>", the MAC being
// HMAC-SHA256 with admin.secret of "gyre-admin.v1.<expiry>". It carries
// nothing else: any holder of a valid token is the admin.

const tokenVersion = "v1"

// signSession returns a session token valid until exp.
func signSession(secret string, exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	return tokenVersion + "." + e + "." + sessionMAC(secret, e)
}

func sessionMAC(secret, exp string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("gyre-admin." + tokenVersion + "." + exp))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

var (
	errTokenMalformed = errors.New("malformed token")
	errTokenSignature = errors.New("bad token signature")
	errTokenExpired   = errors.New("token expired")
)

// checkSession verifies a session token at time now.
func checkSession(secret, tok string, now time.Time) error {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] != tokenVersion {
		return errTokenMalformed
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return errTokenMalformed
	}
	if !hmac.Equal([]byte(parts[2]), []byte(sessionMAC(secret, parts[1]))) {
		return errTokenSignature
	}
	if now.Unix() >= exp {
		return errTokenExpired
	}
	return nil
}

// passwordMatches compares in constant time (for equal lengths; hashing
// first hides the length too).
func passwordMatches(given, want string) bool {
	a := sha256.Sum256([]byte(given))
	b := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
