package gyre_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// TestWildcardRecover: a pattern subscription has no stream to recover,
// so a subscribe asking for recovery is answered as a recovery that could
// not return what was missed: was_recovering true, recovered and
// recoverable false, never an error (not even 112 with the flag that asks
// for it, which would have the client reload and ask again for ever) and
// never a silent {}. Client-side on the wire (JSON bytes, protobuf), and
// server-side through the connect request's subs.
func TestWildcardRecover(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		_, url := newTestNode(t, b.Config(t, wildcardConfig()))

		t.Run("json wire", func(t *testing.T) {
			conn := rawDial(t, url)
			rawCall(t, conn, `{"id":1,"connect":{"token":"`+connToken(t, "alice", 0, nil)+`"}}`, 1)
			for id, req := range map[int]string{
				2: `{"id":2,"subscribe":{"channel":"geo:eu.*","recover":true,"offset":5,"epoch":"abc"}}`,
				3: `{"id":3,"subscribe":{"channel":"geo:us.>","recover":true,"offset":5,"epoch":"abc","flag":2}}`,
			} {
				got := rawCall(t, conn, req, id)
				want := `{"id":` + strconv.Itoa(id) + `,"subscribe":{"was_recovering":true}}`
				if got != want {
					t.Errorf("pattern subscribe with recover answered %s, want %s", got, want)
				}
			}
		})

		t.Run("protobuf", func(t *testing.T) {
			c := dial(t, url, protocol.TypeProtobuf)
			c.connect(connToken(t, "alice", 0, nil))
			r := c.Subscribe(&protocol.SubscribeRequest{Channel: "geo:eu.*", Recover: true, Offset: 5, Epoch: "abc", Flag: 2})
			if r.Error != nil || r.Subscribe == nil {
				t.Fatalf("pattern subscribe with recover: %+v", r)
			}
			if res := r.Subscribe; !res.WasRecovering || res.Recovered || res.Recoverable || res.Positioned || len(res.Publications) > 0 {
				t.Errorf("pattern subscribe with recover: %+v, want was_recovering only", res)
			}
			if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "geo:x.*"}); r.Error != nil || r.Subscribe.WasRecovering {
				t.Errorf("pattern subscribe without recover: %+v, want no was_recovering", r)
			}
		})

		t.Run("server-side", func(t *testing.T) {
			c := dial(t, url, protocol.TypeJSON)
			r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{
				Token: connToken(t, "alice", 0, map[string]any{"channels": []string{"geo:tok.*", "geo:tok2.*"}}),
				Subs:  map[string]*protocol.SubscribeRequest{"geo:tok.*": {Recover: true, Offset: 3, Epoch: "e"}},
			}})
			if r.Error != nil {
				t.Fatalf("connect: %+v", r.Error)
			}
			res := r.Connect.Subs["geo:tok.*"]
			if res == nil || !res.WasRecovering || res.Recovered || res.Recoverable {
				t.Errorf("server-side pattern recovering at connect: %+v, want was_recovering only", res)
			}
			if res := r.Connect.Subs["geo:tok2.*"]; res == nil || res.WasRecovering {
				t.Errorf("server-side pattern not recovering: %+v, want no was_recovering", res)
			}
		})
	})
}

// rawDial opens a JSON WebSocket without the test client's decoding, for
// tests of the exact bytes on the wire.
func rawDial(t *testing.T, url string) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, _, err := ws.Dial(ctx, url)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// rawCall sends one JSON command and returns the reply with id as it came
// (a frame may carry several replies, one per line).
func rawCall(t *testing.T, conn net.Conn, cmd string, id int) string {
	t.Helper()
	if err := wsutil.WriteClientText(conn, []byte(cmd)); err != nil {
		t.Fatalf("write: %v", err)
	}
	prefix := `{"id":` + strconv.Itoa(id) + `,`
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		frame, err := wsutil.ReadServerText(conn)
		if err != nil {
			t.Fatalf("read the reply to %s: %v", cmd, err)
		}
		for line := range strings.SplitSeq(string(frame), "\n") {
			if strings.HasPrefix(line, prefix) {
				return line
			}
		}
	}
}
