package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync"
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

// loginLimiter counts failed logins per remote address in a sliding
// window: after max failures within window, the address is refused until
// the oldest of them leaves the window. A successful login does not clear
// the count (a guesser who hits once should not get a fresh budget).
type loginLimiter struct {
	max    int
	window time.Duration
	now    func() time.Time

	mu       sync.Mutex
	failures map[string][]time.Time
}

func newLoginLimiter(max int, window time.Duration, now func() time.Time) *loginLimiter {
	return &loginLimiter{max: max, window: window, now: now, failures: make(map[string][]time.Time)}
}

// wait returns how long addr must wait before trying again; 0 means it
// may try now.
func (l *loginLimiter) wait(addr string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f := l.prune(addr, now)
	if len(f) < l.max {
		return 0
	}
	return f[0].Add(l.window).Sub(now)
}

// fail records a failed login of addr.
func (l *loginLimiter) fail(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f := l.prune(addr, now)
	l.failures[addr] = append(f, now)
	// Bound the memory an address spraying requests can take: forget
	// addresses whose failures all left the window.
	if len(l.failures) > 10000 {
		for a := range l.failures {
			l.prune(a, now)
		}
	}
}

// prune drops the failures of addr older than the window.
func (l *loginLimiter) prune(addr string, now time.Time) []time.Time {
	f := l.failures[addr]
	i := 0
	for i < len(f) && now.Sub(f[i]) >= l.window {
		i++
	}
	f = f[i:]
	if len(f) == 0 {
		delete(l.failures, addr)
		return nil
	}
	l.failures[addr] = f
	return f
}
