package websocket

import (
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/gobwas/ws"
)

// TestNoGoroutineLeak runs reader loops as the engine does and ends the
// connections every way they can end; every reader must return.
func TestNoGoroutineLeak(t *testing.T) {
	checkNoLeak(t)
	s := newTestServer(t, Options{})
	ends := []struct {
		name    string
		end     func(cl *client, c *Conn)
		wantErr func(error) bool
	}{
		{
			name:    "server closes",
			end:     func(_ *client, c *Conn) { _ = c.Close(3001, "shutdown") },
			wantErr: func(err error) bool { return errors.Is(err, ErrClosed) },
		},
		{
			name:    "client closes",
			end:     func(cl *client, _ *Conn) { cl.send(ws.OpClose, true, ws.NewCloseFrameBody(1000, "")) },
			wantErr: func(err error) bool { var ce *CloseError; return errors.As(err, &ce) },
		},
		{
			name:    "client drops",
			end:     func(cl *client, _ *Conn) { _ = cl.conn.Close() },
			wantErr: func(err error) bool { return errors.Is(err, io.EOF) },
		},
		{
			name:    "client breaks the protocol",
			end:     func(cl *client, _ *Conn) { cl.sendRaw([]byte{0x81, 0x00}) },
			wantErr: func(err error) bool { return errors.Is(err, ErrProtocol) },
		},
	}
	for _, e := range ends {
		t.Run(e.name, func(t *testing.T) {
			var wg sync.WaitGroup
			for range 10 {
				cl, c := s.connect(t, "/")
				wg.Go(func() {
					for {
						_, _, err := c.ReadMessage()
						if err == nil {
							continue
						}
						if !e.wantErr(err) {
							t.Errorf("reader ended with %v", err)
						}
						_ = c.Close(1000, "")
						return
					}
				})
				cl.send(ws.OpText, true, []byte("{}"))
				e.end(cl, c)
			}
			wg.Wait()
		})
	}
}
