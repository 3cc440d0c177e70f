// Command chat is a one-room browser chat on top of the Gyre engine: one
// "chat:index" channel with history, presence and join/leave, where
// anonymous visitors pick a name and publish from the browser through
// centrifuge-js.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"time"
	"unicode/utf8"

	"github.com/gyrehq/gyre"
)

//go:embed index.html
var indexHTML []byte

func main() {
	addr := flag.String("addr", "localhost:8000", "address to listen on")
	jsPath := flag.String("js", "node_modules/centrifuge/dist/centrifuge.js", "path of centrifuge.js to serve to the browser")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))

	node, err := newNode(logger)
	if err != nil {
		logger.Error("start node", "error", err)
		os.Exit(1)
	}
	if _, err := os.Stat(*jsPath); err != nil {
		logger.Warn("centrifuge.js not found: run npm install (see README.md) or pass -js", "path", *jsPath)
	}
	logger.Info("chat listening", "url", "http://"+*addr)
	if err := http.ListenAndServe(*addr, newMux(node, *jsPath)); err != nil {
		logger.Error("serve", "error", err)
		os.Exit(1)
	}
}

// newNode runs a node with the chat namespace. There are no accounts: the
// name the visitor typed, sent as connect data, is the user id.
func newNode(logger *slog.Logger) (*gyre.Node, error) {
	node, err := gyre.NewNode(gyre.Config{
		Logger: logger,
		Channels: gyre.ChannelConfig{Namespaces: []gyre.Namespace{{
			Name: "chat",
			ChannelOptions: gyre.ChannelOptions{
				HistorySize: 50, HistoryTTL: time.Hour, ForceRecovery: true,
				Presence: true, JoinLeave: true, ForcePushJoinLeave: true,
				AllowSubscribeForClient: true, AllowPublishForSubscriber: true,
				AllowHistoryForSubscriber: true, AllowPresenceForSubscriber: true,
			},
		}}},
	})
	if err != nil {
		return nil, err
	}
	node.OnConnecting(func(_ context.Context, e gyre.ConnectingEvent) (gyre.ConnectingReply, error) {
		var data struct{ Name string }
		if json.Unmarshal(e.Data, &data) != nil || data.Name == "" || utf8.RuneCountInString(data.Name) > 32 {
			return gyre.ConnectingReply{}, gyre.DisconnectBadRequest
		}
		return gyre.ConnectingReply{Credentials: &gyre.Credentials{UserID: data.Name}}, nil
	})
	return node, node.Run()
}

// newMux serves the page, the SDK's browser bundle and the WebSocket
// endpoint.
func newMux(node *gyre.Node, jsPath string) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/connection/websocket", gyre.NewWebsocketHandler(node, gyre.WebsocketConfig{}))
	mux.HandleFunc("GET /centrifuge.js", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, jsPath)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(indexHTML)
	})
	return mux
}
