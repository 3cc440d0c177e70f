package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre/protocol"
)

func newTestServer(t *testing.T, jsPath string) *httptest.Server {
	t.Helper()
	node, err := newNode(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newMux(node, jsPath))
	t.Cleanup(func() {
		srv.Close()
		_ = node.Shutdown(context.Background())
	})
	return srv
}

func TestPages(t *testing.T) {
	js := filepath.Join(t.TempDir(), "centrifuge.js")
	if err := os.WriteFile(js, []byte("// bundle"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := newTestServer(t, js)
	tests := []struct {
		path     string
		status   int
		contains string
	}{
		{"/", http.StatusOK, `<script src="/centrifuge.js">`},
		{"/centrifuge.js", http.StatusOK, "// bundle"},
		{"/other", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res, err := http.Get(srv.URL + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status || !strings.Contains(string(body), tt.contains) {
				t.Fatalf("GET %s: %d %q, want %d containing %q", tt.path, res.StatusCode, body, tt.status, tt.contains)
			}
		})
	}
}

// TestChat goes through what the page does: connect with a name,
// subscribe, publish, read history and presence.
func TestChat(t *testing.T) {
	srv := newTestServer(t, "missing.js")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, _, err := ws.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/connection/websocket")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))

	cmds := `{"id":1,"connect":{"data":{"name":"ann"}}}` + "\n" +
		`{"id":2,"subscribe":{"channel":"chat:index"}}` + "\n" +
		`{"id":3,"publish":{"channel":"chat:index","data":{"text":"hi"}}}` + "\n" +
		`{"id":4,"history":{"channel":"chat:index","limit":10}}` + "\n" +
		`{"id":5,"presence":{"channel":"chat:index"}}`
	if err := wsutil.WriteClientText(conn, []byte(cmds)); err != nil {
		t.Fatal(err)
	}
	replies := map[uint32]*protocol.Reply{}
	for len(replies) < 5 {
		frame, err := wsutil.ReadServerText(conn)
		if err != nil {
			t.Fatalf("read: %v (replies so far: %d)", err, len(replies))
		}
		rs, err := protocol.DecodeReplies(protocol.TypeJSON, frame, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Error != nil {
				t.Fatalf("reply %d: error %d %s", r.Id, r.Error.Code, r.Error.Message)
			}
			if r.Id > 0 {
				replies[r.Id] = r
			}
		}
	}
	if sub := replies[2].Subscribe; sub == nil || !sub.Recoverable {
		t.Fatalf("subscribe result %+v: want recoverable", sub)
	}
	pubs := replies[4].History.Publications
	if len(pubs) != 1 || !bytes.Equal(pubs[0].Data, []byte(`{"text":"hi"}`)) || pubs[0].Info.User != "ann" {
		t.Fatalf("history %+v: want one publication of ann", pubs)
	}
	presence := replies[5].Presence.Presence
	if len(presence) != 1 {
		t.Fatalf("presence %+v: want ann alone", presence)
	}
	for _, info := range presence {
		if info.User != "ann" {
			t.Fatalf("presence user %q, want ann", info.User)
		}
	}
}

func TestConnectWithoutName(t *testing.T) {
	srv := newTestServer(t, "missing.js")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, _, err := ws.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/connection/websocket")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if err := wsutil.WriteClientText(conn, []byte(`{"id":1,"connect":{}}`)); err != nil {
		t.Fatal(err)
	}
	_, err = wsutil.ReadServerText(conn)
	var closed wsutil.ClosedError
	if !errors.As(err, &closed) || closed.Code != 3501 {
		t.Fatalf("read: %v, want close 3501", err)
	}
}
