package admin

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// loginQueue is how many throttled attempts of one address may wait for
// their turn at once. Beyond it an attempt is refused at once, without a
// look at its password: an address flooding the route in parallel gets
// no more guesses, and holds no more waiting requests, than this.
const loginQueue = 3

// auth logs in: a password for a session token.
func (h *Handler) auth(w http.ResponseWriter, r *http.Request) {
	client := clientAddr(r, h.cfg.TrustedProxies)
	remote := client.String()
	if !client.IsValid() {
		remote = r.RemoteAddr
	}
	if h.cfg.Password == "" || h.cfg.Secret == "" {
		h.log.Error("admin login refused: admin.password and admin.secret must be set", "remote", remote)
		writeError(w, http.StatusBadRequest, "login is not configured")
		return
	}
	password, err := loginPassword(w, r)
	if err != nil {
		h.log.Info("admin login refused: unreadable form", "remote", remote, "error", err)
		writeError(w, http.StatusBadRequest, "unreadable form")
		return
	}
	key := loginKey(client, r)
	t := h.logins.turn(key)
	if t.report {
		h.log.Warn("admin login throttled: too many failed attempts", "remote", remote,
			"failures", t.failures, "window", h.cfg.LoginWindow, "attempts", t.attempts, "spacing", h.logins.spacing)
	}
	if t.refused {
		tooMany(w, t.wait, "too many login attempts waiting from this address")
		return
	}
	if t.wait > 0 {
		if err := h.sleep(r.Context(), t.wait); err != nil {
			return // the client went away; its turn is spent
		}
	}
	if !passwordMatches(password, h.cfg.Password) {
		retry := h.logins.fail(key)
		if t.throttled {
			tooMany(w, retry, "wrong password; too many failed logins from this address")
			return
		}
		h.log.Warn("admin login refused: wrong password", "remote", remote)
		writeError(w, http.StatusBadRequest, "wrong password")
		return
	}
	h.log.Info("admin login", "remote", remote)
	writeJSON(w, http.StatusOK, map[string]string{"token": signSession(h.cfg.Secret, h.cfg.Now().Add(h.cfg.SessionTTL))})
}

// loginPassword reads the password field of a form, urlencoded or
// multipart (as browsers send a FormData).
func loginPassword(w http.ResponseWriter, r *http.Request) (string, error) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	var err error
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		err = r.ParseMultipartForm(1 << 20)
	} else {
		err = r.ParseForm()
	}
	return r.PostForm.Get("password"), err
}

// tooMany answers 429 with the wait in Retry-After and in the message.
func tooMany(w http.ResponseWriter, wait time.Duration, why string) {
	secs := max(1, int((wait+time.Second-1)/time.Second))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeError(w, http.StatusTooManyRequests, fmt.Sprintf("%s; the next attempt is answered in %d seconds", why, secs))
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// loginLimiter slows password guessing per client address without ever
// refusing the right password because of earlier failures. After max
// failures within window, an address's attempts are answered one at a
// time, window/max apart (the rate the limit allows), each checked only
// when its turn comes: right and wrong passwords wait alike, so that
// neither the answer nor its absence tells a guess early. A successful
// login does not clear the count (a guesser who hits once should not get
// a fresh budget).
type loginLimiter struct {
	max     int
	window  time.Duration
	spacing time.Duration
	now     func() time.Time

	mu      sync.Mutex
	clients map[string]*loginClient
	// sweepAt is the number of addresses at which the ones with nothing
	// left to remember are forgotten.
	sweepAt int
}

// loginClient is what the limiter remembers of one address.
type loginClient struct {
	failures []time.Time // the latest, at most max, oldest first
	next     time.Time   // the turn of the next throttled attempt
	logged   time.Time   // when its throttling was last logged
	unlogged int         // throttled attempts since
}

// loginTurn is when an attempt is answered.
type loginTurn struct {
	// wait is how long the attempt waits for its turn; when refused, how
	// long until an attempt would be given a turn.
	wait      time.Duration
	throttled bool // the address was throttled when the attempt came
	refused   bool // loginQueue attempts are waiting already
	// report asks for the throttling to be logged (once per address per
	// window), with the failures in the window and the throttled
	// attempts since the previous report.
	report             bool
	failures, attempts int
}

const loginSweepMin = 10000

func newLoginLimiter(max int, window time.Duration, now func() time.Time) *loginLimiter {
	return &loginLimiter{
		max: max, window: window, spacing: window / time.Duration(max), now: now,
		clients: make(map[string]*loginClient), sweepAt: loginSweepMin,
	}
}

// turn gives an attempt of key its turn.
func (l *loginLimiter) turn(key string) loginTurn {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	c := l.clients[key]
	if c == nil || len(l.prune(c, now)) < l.max {
		return loginTurn{}
	}
	t := loginTurn{throttled: true}
	c.unlogged++
	if now.Sub(c.logged) >= l.window {
		t.report, t.failures, t.attempts = true, len(c.failures), c.unlogged
		c.logged, c.unlogged = now, 0
	}
	slot := c.next
	if slot.Before(now) {
		slot = now
	}
	t.wait = slot.Sub(now)
	if limit := loginQueue * l.spacing; t.wait > limit {
		t.refused, t.wait = true, t.wait-limit
		return t
	}
	c.next = slot.Add(l.spacing)
	return t
}

// fail records a failed login of key, and says how long until its next
// attempt would be answered.
func (l *loginLimiter) fail(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	c := l.clients[key]
	if c == nil {
		c = &loginClient{}
		l.clients[key] = c
	}
	f := append(l.prune(c, now), now)
	if len(f) > l.max {
		f = f[len(f)-l.max:]
	}
	c.failures = f
	if len(f) == l.max && c.next.Before(now.Add(l.spacing)) {
		c.next = now.Add(l.spacing)
	}
	if len(l.clients) > l.sweepAt {
		l.sweep(now)
	}
	return max(0, c.next.Sub(now))
}

// prune drops the failures of c older than the window.
func (l *loginLimiter) prune(c *loginClient, now time.Time) []time.Time {
	i := 0
	for i < len(c.failures) && now.Sub(c.failures[i]) >= l.window {
		i++
	}
	c.failures = c.failures[i:]
	return c.failures
}

// sweep forgets the addresses with no failure in the window and no turn
// ahead, so that addresses spraying guesses cannot grow the map without
// bound; the next sweep waits until the map doubles, which keeps the cost
// per failure constant.
func (l *loginLimiter) sweep(now time.Time) {
	for k, c := range l.clients {
		if len(l.prune(c, now)) == 0 && !c.next.After(now) {
			delete(l.clients, k)
		}
	}
	l.sweepAt = max(loginSweepMin, 2*len(l.clients))
}
