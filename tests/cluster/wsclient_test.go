package cluster_test

import (
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
	"github.com/gyrehq/gyre/token"
)

// waitLimit bounds every wait for something a node should do soon; it is
// a hang guard, not a timing assertion.
const waitLimit = 30 * time.Second

// signToken signs an HS256 connection token for user.
func signToken(t testing.TB, user string) string {
	t.Helper()
	tok, err := token.SignHMAC("HS256", []byte(hmacSecret), map[string]any{
		"sub": user,
		"exp": time.Now().Add(time.Hour).Unix(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// connectUser dials node n and connects as user.
func connectUser(t testing.TB, n *gyreproc.Node, user string) (*wstest.Client, *protocol.ConnectResult) {
	t.Helper()
	c := wstest.Dial(t, n.WSURL(), protocol.TypeJSON, wstest.WaitLimit(waitLimit))
	r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: signToken(t, user), Name: "cluster-test"}})
	if r.Error != nil {
		t.Fatalf("connect to %s: error %d %s", n.Name, r.Error.Code, r.Error.Message)
	}
	return c, r.Connect
}
