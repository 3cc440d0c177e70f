package gyre_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"

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
