package admin_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/server/admin"
)

// TestLoginRightPasswordAfterFailures: failures throttle an address's
// attempts (each waits its turn, window/max apart) but never refuse the
// right password.
func TestLoginRightPasswordAfterFailures(t *testing.T) {
	e := newEnv(t, admin.Config{LoginFailures: 3, LoginWindow: time.Minute})
	waits := e.waits()
	for i := range 3 {
		if r := e.login("wrong"); r.status != 400 {
			t.Fatalf("attempt %d: %d %s", i, r.status, r.body)
		}
	}
	if len(*waits) != 0 {
		t.Fatalf("attempts under the limit waited: %v", *waits)
	}
	// A wrong guess now waits its turn, and says when the next is.
	r := e.login("wrong")
	if r.status != 429 || r.header.Get("Retry-After") != "20" {
		t.Fatalf("throttled wrong password: %d %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	// The right one waits its turn too, then logs in.
	if r := e.login(testPassword); r.status != 200 {
		t.Fatalf("right password while throttled: %d %s", r.status, r.body)
	}
	if want := []time.Duration{20 * time.Second, 20 * time.Second}; !slices.Equal(*waits, want) {
		t.Fatalf("waits %v, want %v", *waits, want)
	}
	// Many more failures change nothing for it, and go at most 3 a
	// minute of the test's clock.
	start := e.clock.Now()
	unthrottled := 0
	for range 20 {
		switch r := e.login("wrong"); r.status {
		case 400:
			unthrottled++
		case 429:
		default:
			t.Fatalf("wrong password: %d %s", r.status, r.body)
		}
	}
	if r := e.login(testPassword); r.status != 200 {
		t.Fatalf("right password after 23 failures: %d %s", r.status, r.body)
	}
	windows := int(e.clock.Now().Sub(start)/time.Minute) + 1
	if unthrottled > 3*windows || unthrottled == 20 {
		t.Fatalf("%d of 20 wrong passwords answered at once over %d windows", unthrottled, windows)
	}
	if least := 17 * 20 * time.Second; e.clock.Now().Sub(start) < least {
		t.Fatalf("20 wrong passwords took %v of the test's clock, want at least %v", e.clock.Now().Sub(start), least)
	}
	// Each wrong password answered at once is logged; the throttling
	// once per address per window.
	if n := len(e.logs.Find(slog.LevelWarn, "admin login refused: wrong password", nil)); n != 3+unthrottled {
		t.Fatalf("%d wrong-password lines, want %d", n, 3+unthrottled)
	}
	n := len(e.logs.Find(slog.LevelWarn, "admin login throttled: too many failed attempts", map[string]string{"remote": "127.0.0.1"}))
	if n == 0 || n > windows+1 {
		t.Fatalf("%d throttling lines, want 1 to %d", n, windows+1)
	}
	// Once a window has passed without failures, attempts are answered
	// at once again.
	waited := len(*waits)
	e.clock.advance(time.Minute)
	if r := e.login("wrong"); r.status != 400 {
		t.Fatalf("a window later: %d %s", r.status, r.body)
	}
	if r := e.login(testPassword); r.status != 200 || len(*waits) != waited {
		t.Fatalf("a window later, the right password: %d, waits %v", r.status, *waits)
	}
}

// TestLoginFlood: attempts of one address sent in parallel wait their
// turns; beyond loginQueue of them waiting, more are refused without a
// look at the password.
func TestLoginFlood(t *testing.T) {
	e := newEnv(t, admin.Config{LoginFailures: 3, LoginWindow: time.Minute})
	for range 3 {
		e.login("wrong")
	}
	waiting := make(chan time.Duration)
	release := make(chan struct{})
	admin.SetSleep(e.h, func(ctx context.Context, d time.Duration) error {
		waiting <- d
		<-release
		return nil
	})
	var wg sync.WaitGroup
	statuses := make([]int, 3)
	for i := range 3 {
		wg.Go(func() { statuses[i] = e.login(testPassword).status })
	}
	var got []time.Duration
	for range 3 {
		got = append(got, <-waiting)
	}
	slices.Sort(got)
	if want := []time.Duration{20 * time.Second, 40 * time.Second, time.Minute}; !slices.Equal(got, want) {
		t.Fatalf("turns %v, want %v", got, want)
	}
	r := e.login(testPassword)
	if r.status != 429 || r.header.Get("Retry-After") != "20" {
		t.Fatalf("a fourth waiting attempt: %d %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	close(release)
	wg.Wait()
	for i, s := range statuses {
		if s != 200 {
			t.Fatalf("waiting attempt %d with the right password: %d", i, s)
		}
	}
}

// TestLoginClientAddress: the limit counts against the address a trusted
// proxy reports, and against the socket address of any other peer,
// whatever it claims.
func TestLoginClientAddress(t *testing.T) {
	xff := func(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }
	throttledAfterFailures := func(t *testing.T, e *env, fails, then http.Header) bool {
		t.Helper()
		for range 3 {
			if r := e.loginWith("wrong", fails); r.status != 400 {
				t.Fatalf("failure under the limit: %d %s", r.status, r.body)
			}
		}
		waits := e.waits()
		r := e.loginWith("wrong", then)
		return r.status == 429 && len(*waits) == 1
	}
	local := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

	t.Run("trusted proxy", func(t *testing.T) {
		e := newEnv(t, admin.Config{LoginFailures: 3, TrustedProxies: local})
		if throttledAfterFailures(t, e, xff("203.0.113.1"), xff("203.0.113.2")) {
			t.Fatal("another client behind the proxy was throttled")
		}
		if !throttledAfterFailures(t, newEnv(t, admin.Config{LoginFailures: 3, TrustedProxies: local}), xff("203.0.113.1"), xff("203.0.113.1")) {
			t.Fatal("the failing client behind the proxy was not throttled")
		}
		// A client prepending an address of its own to the header does
		// not change which address it is counted as.
		e = newEnv(t, admin.Config{LoginFailures: 3, TrustedProxies: local})
		if !throttledAfterFailures(t, e, xff("198.51.100.1, 203.0.113.1"), xff("198.51.100.2, 203.0.113.1")) {
			t.Fatal("a spoofed first hop gave a fresh budget")
		}
		if len(e.logs.Find(slog.LevelWarn, "admin login throttled: too many failed attempts", map[string]string{"remote": "203.0.113.1"})) != 1 {
			t.Fatal("the throttling is not logged with the client's address")
		}
	})
	t.Run("untrusted peer", func(t *testing.T) {
		for name, proxies := range map[string][]netip.Prefix{
			"none":  nil,
			"other": {netip.MustParsePrefix("10.0.0.0/8")},
		} {
			e := newEnv(t, admin.Config{LoginFailures: 3, TrustedProxies: proxies})
			if !throttledAfterFailures(t, e, xff("203.0.113.1"), xff("203.0.113.2")) {
				t.Fatalf("trusted proxies %s: a forwarding header from an untrusted peer was believed", name)
			}
		}
	})
}

// TestQueryToken: a session token in the query is taken only by the
// tail's event stream (EventSource cannot send a header); on the other
// routes it is as if there were none.
func TestQueryToken(t *testing.T) {
	e := newEnv(t, admin.Config{})
	tok := e.token()
	if r := e.get("/admin/nodes?token="+tok, ""); r.status != 401 {
		t.Fatalf("nodes, token in the query: %d %s", r.status, r.body)
	}
	if r := e.postJSON("/admin/api?token="+tok, "", `{"method":"info","params":{}}`); r.status != 401 {
		t.Fatalf("api, token in the query: %d %s", r.status, r.body)
	}
	if r := e.postJSON("/admin/token?token="+tok, "", `{"kind":"connection","user":"u"}`); r.status != 401 {
		t.Fatalf("token route, token in the query: %d %s", r.status, r.body)
	}
	var init struct{ Authenticated bool }
	mustJSON(t, e.get("/admin/init?token="+tok, "").body, &init)
	if init.Authenticated {
		t.Fatal("init: authenticated by a token in the query")
	}
	if r := e.postJSON("/admin/api", tok, `{"method":"info","params":{}}`); r.status != 200 {
		t.Fatalf("api, token in the header: %d %s", r.status, r.body)
	}
	openTail(t, e, "news", tok)
}
