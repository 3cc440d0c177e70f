package brokertest

import (
	"bytes"
	"testing"

	"github.com/gyrehq/gyre/broker"
)

// RunPresenceTests runs the presence contract suite against managers made
// by newPM, one per subtest, closed when the subtest ends. Entries must
// live long enough for a subtest to finish (the default TTLs are fine);
// expiry has its own suite, RunPresenceExpiryTests.
func RunPresenceTests(t *testing.T, newPM func(t *testing.T) broker.PresenceManager) {
	tests := []struct {
		name string
		fn   func(t *testing.T, pm broker.PresenceManager)
	}{
		{"Empty", testPresenceEmpty},
		{"AddAndStats", testPresenceAdd},
		{"Refresh", testPresenceRefresh},
		{"Remove", testPresenceRemove},
		{"ChannelsIsolated", testPresenceIsolated},
		{"ReturnsCopies", testPresenceCopies},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newPresenceEnv(t, newPM))
		})
	}
}

// RunPresenceExpiryTests checks that entries which are not refreshed
// expire. newPM must configure a presence TTL well under the suite's
// 20-second patience; a second or less keeps the run short.
func RunPresenceExpiryTests(t *testing.T, newPM func(t *testing.T) broker.PresenceManager) {
	t.Run("Expiry", func(t *testing.T) {
		pm := newPresenceEnv(t, newPM)
		ch := uniqueChannel(t)
		addPresence(t, pm, ch, info("c1", "u1"))
		addPresence(t, pm, ch, info("c2", "u2"))
		eventually(t, "presence to expire", func() bool {
			return len(presence(t, pm, ch)) == 0
		})
		if st := stats(t, pm, ch); st != (broker.PresenceStats{}) {
			t.Errorf("stats after expiry = %+v, want zero", st)
		}
		addPresence(t, pm, ch, info("c3", "u3"))
		if got := presence(t, pm, ch); len(got) != 1 || got["c3"] == nil {
			t.Errorf("presence after re-adding = %v, want c3 only", got)
		}
	})
}

func newPresenceEnv(t *testing.T, newPM func(t *testing.T) broker.PresenceManager) broker.PresenceManager {
	t.Helper()
	pm := newPM(t)
	t.Cleanup(func() {
		if err := pm.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return pm
}

func info(client, user string) *broker.ClientInfo {
	return &broker.ClientInfo{ClientID: client, UserID: user, ConnInfo: []byte(`{"c":"` + client + `"}`), ChanInfo: []byte(`{"u":"` + user + `"}`)}
}

func addPresence(t testing.TB, pm broker.PresenceManager, ch string, i *broker.ClientInfo) {
	t.Helper()
	if err := pm.AddPresence(ch, i.ClientID, i); err != nil {
		t.Fatalf("AddPresence(%q, %q): %v", ch, i.ClientID, err)
	}
}

func presence(t testing.TB, pm broker.PresenceManager, ch string) map[string]*broker.ClientInfo {
	t.Helper()
	p, err := pm.Presence(ch)
	if err != nil {
		t.Fatalf("Presence(%q): %v", ch, err)
	}
	return p
}

func stats(t testing.TB, pm broker.PresenceManager, ch string) broker.PresenceStats {
	t.Helper()
	st, err := pm.PresenceStats(ch)
	if err != nil {
		t.Fatalf("PresenceStats(%q): %v", ch, err)
	}
	return st
}

func sameInfo(a, b *broker.ClientInfo) bool {
	return a != nil && b != nil && a.ClientID == b.ClientID && a.UserID == b.UserID &&
		bytes.Equal(a.ConnInfo, b.ConnInfo) && bytes.Equal(a.ChanInfo, b.ChanInfo)
}

func checkPresence(t testing.TB, pm broker.PresenceManager, ch string, want ...*broker.ClientInfo) {
	t.Helper()
	got := presence(t, pm, ch)
	if len(got) != len(want) {
		t.Errorf("presence has %d entries, want %d: %v", len(got), len(want), got)
	}
	for _, w := range want {
		if !sameInfo(got[w.ClientID], w) {
			t.Errorf("presence[%q] = %+v, want %+v", w.ClientID, got[w.ClientID], w)
		}
	}
}

func testPresenceEmpty(t *testing.T, pm broker.PresenceManager) {
	ch := uniqueChannel(t)
	checkPresence(t, pm, ch)
	if st := stats(t, pm, ch); st != (broker.PresenceStats{}) {
		t.Errorf("stats of an empty channel = %+v", st)
	}
}

// testPresenceAdd: entries are keyed by client; stats count clients and
// distinct users.
func testPresenceAdd(t *testing.T, pm broker.PresenceManager) {
	ch := uniqueChannel(t)
	a, b, c := info("c1", "u1"), info("c2", "u1"), info("c3", "u2")
	anon := info("c4", "")
	for _, i := range []*broker.ClientInfo{a, b, c, anon} {
		addPresence(t, pm, ch, i)
	}
	checkPresence(t, pm, ch, a, b, c, anon)
	if st := stats(t, pm, ch); st != (broker.PresenceStats{NumClients: 4, NumUsers: 3}) {
		t.Errorf("stats = %+v, want 4 clients, 3 users (u1, u2, anonymous)", st)
	}
}

// testPresenceRefresh: adding a present client again replaces its info
// without adding an entry.
func testPresenceRefresh(t *testing.T, pm broker.PresenceManager) {
	ch := uniqueChannel(t)
	addPresence(t, pm, ch, info("c1", "u1"))
	updated := info("c1", "u1")
	updated.ChanInfo = []byte(`{"new":true}`)
	addPresence(t, pm, ch, updated)
	checkPresence(t, pm, ch, updated)
	if st := stats(t, pm, ch); st != (broker.PresenceStats{NumClients: 1, NumUsers: 1}) {
		t.Errorf("stats = %+v, want 1 client, 1 user", st)
	}
}

// testPresenceRemove: removing drops one client; removing an absent one is
// not an error.
func testPresenceRemove(t *testing.T, pm broker.PresenceManager) {
	ch := uniqueChannel(t)
	a, b := info("c1", "u1"), info("c2", "u2")
	addPresence(t, pm, ch, a)
	addPresence(t, pm, ch, b)
	for _, tt := range []struct {
		name   string
		client *broker.ClientInfo
		want   []*broker.ClientInfo
	}{
		{"One", a, []*broker.ClientInfo{b}},
		{"Again", a, []*broker.ClientInfo{b}},
		{"Last", b, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := pm.RemovePresence(ch, tt.client.ClientID, tt.client.UserID); err != nil {
				t.Fatalf("RemovePresence: %v", err)
			}
			checkPresence(t, pm, ch, tt.want...)
			if st := stats(t, pm, ch); st.NumClients != len(tt.want) || st.NumUsers != len(tt.want) {
				t.Errorf("stats = %+v, want %d clients and users", st, len(tt.want))
			}
		})
	}
	if err := pm.RemovePresence(uniqueChannel(t), "c1", "u1"); err != nil {
		t.Errorf("RemovePresence on an unknown channel: %v", err)
	}
}

func testPresenceIsolated(t *testing.T, pm broker.PresenceManager) {
	a, b := uniqueChannel(t), uniqueChannel(t)
	ia, ib := info("c1", "u1"), info("c2", "u2")
	addPresence(t, pm, a, ia)
	addPresence(t, pm, b, ib)
	checkPresence(t, pm, a, ia)
	checkPresence(t, pm, b, ib)
	if err := pm.RemovePresence(a, "c1", "u1"); err != nil {
		t.Fatalf("RemovePresence: %v", err)
	}
	checkPresence(t, pm, b, ib)
}

// testPresenceCopies: neither the caller's info nor a returned one
// aliases the stored entry.
func testPresenceCopies(t *testing.T, pm broker.PresenceManager) {
	ch := uniqueChannel(t)
	in := info("c1", "u1")
	addPresence(t, pm, ch, in)
	in.ConnInfo[0] = 'X'
	in.UserID = "changed"
	got := presence(t, pm, ch)["c1"]
	if got == nil {
		t.Fatal("entry missing")
	}
	got.ChanInfo[0] = 'X'
	got.ClientID = "changed"
	checkPresence(t, pm, ch, info("c1", "u1"))
}
