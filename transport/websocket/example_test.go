package websocket_test

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/gyrehq/gyre/transport/websocket"
)

// A handler upgrades, then reads in its own goroutine so that the HTTP
// server's goroutine, with its larger stack, is released. Replies would be
// written by another goroutine with WriteFrame.
func ExampleUpgrade() {
	http.HandleFunc("/connection/websocket", func(w http.ResponseWriter, r *http.Request) {
		conn, format, err := websocket.Upgrade(w, r, websocket.Options{})
		if err != nil {
			slog.Debug("websocket upgrade", "err", err)
			return
		}
		go func() {
			for {
				payload, binary, err := conn.ReadMessage()
				switch {
				case errors.Is(err, websocket.ErrMessageTooLarge):
					_ = conn.Close(1009, "message too big")
					return
				case err != nil:
					_ = conn.Close(3000, "connection closed")
					return
				}
				// Decode payload as format; it is valid until the next read.
				_, _, _ = payload, binary, format
			}
		}()
	})
}
