package gyre_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// TestStaleConnection guards a race: the stale timer fires on its own
// goroutine, which reads the timer field that NewClient sets.
func TestStaleConnection(t *testing.T) {
	t.Parallel()
	cfg := chatConfig()
	cfg.StaleCloseDelay = 200 * time.Millisecond
	_, url := newTestNode(t, cfg)
	c := dial(t, url, protocol.TypeJSON)
	if ce := c.WaitClose(); ce.Code != 3502 {
		t.Fatalf("close code %d (%s), want 3502", ce.Code, ce.Reason)
	}
}

// A connect registers its client in the hub after checking that the node
// is not closing, and Shutdown walks the hub after marking it closing: a
// connect between the two must still end.
//
// TestShutdownDuringConnects shuts the node down while connect commands
// are in flight: every connection ends, none stays registered.
func TestShutdownDuringConnects(t *testing.T) {
	const conns = 200
	n, url := newTestNode(t, chatConfig())
	raws := make([]*rawConn, conns)
	frames := make([][]byte, conns)
	for i := range raws {
		raws[i] = dialRaw(t, url, protocol.TypeJSON)
		cmd, err := protocol.AppendCommand(nil, protocol.TypeJSON, &protocol.Command{Id: 1, Connect: &protocol.ConnectRequest{
			Token: connToken(t, "u"+strconv.Itoa(i), 0, map[string]any{"channels": []string{"chat:s"}}),
		}})
		if err != nil {
			t.Fatal(err)
		}
		frames[i] = cmd
	}
	var wg sync.WaitGroup
	for i, c := range raws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.writeFrame(ws.OpText, frames[i])
		}()
		if i == conns/2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := n.Shutdown(ctx); err != nil {
					t.Errorf("shutdown: %v", err)
				}
			}()
		}
	}
	wg.Wait()
	for i, c := range raws {
		code, err := c.readUntilClosed(10 * time.Second)
		if err != nil {
			t.Fatalf("connection %d still open after shutdown (%v); node info %+v", i, err, n.Info()[0])
		}
		if code != 3001 {
			t.Errorf("connection %d closed with %d, want 3001", i, code)
		}
	}
	if info := n.Info()[0]; info.NumClients != 0 || info.NumSubs != 0 {
		t.Fatalf("info after shutdown %+v", info)
	}
}

// TestShutdownAfterAbruptCloses: clients that connect, subscribe and drop
// their TCP connection at any moment, while publications flow, leave
// nothing behind that Shutdown would wait for. A write that failed while a
// disconnect was closing the client once left its transport open, the
// connection counted as live, and Shutdown waited until its deadline.
func TestShutdownAfterAbruptCloses(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		n, url := newTestNode(t, b.Config(t, chatConfig()))
		tok := connToken(t, "42", time.Hour, nil)
		var wg sync.WaitGroup
		for g := range 8 {
			ch := "chat:abrupt" + strconv.Itoa(g)
			wg.Go(func() {
				for i := range 60 {
					conn, _, _, err := ws.Dialer{}.Dial(context.Background(), url)
					if err != nil {
						continue
					}
					frame := `{"id":1,"connect":{"token":"` + tok + `"}}` + "\n" +
						`{"id":2,"subscribe":{"channel":"` + ch + `","recover":true,"offset":0,"epoch":""}}`
					_ = wsutil.WriteClientText(conn, []byte(frame))
					time.Sleep(time.Duration(i%7) * 300 * time.Microsecond)
					if i%3 == 0 {
						n.Publish(ch, []byte(`{}`))
					}
					conn.Close()
				}
			})
		}
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v (a closed connection is still counted as live)", err)
		}
	})
}
