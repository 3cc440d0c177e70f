package gyre_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
)

// newCompressionNode starts a node whose WebSocket handler accepts
// permessage-deflate with ws, and returns its URL.
func newCompressionNode(t *testing.T, cfg gyre.Config, ws gyre.WebsocketConfig) (*gyre.Node, string) {
	t.Helper()
	if cfg.Token.HMACSecretKey == "" {
		cfg.Token.HMACSecretKey = testSecret
	}
	n, err := gyre.NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/connection/websocket", gyre.NewWebsocketHandler(n, ws))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
		srv.Close()
	})
	return n, "ws" + strings.TrimPrefix(srv.URL, "http") + "/connection/websocket"
}

// feedItem is a publication payload as live feeds send them: JSON with
// repeating keys and varying values, about 1 KB.
func feedItem(i int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"items":[`)
	for j := range 8 {
		if j > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"symbol":"SYM%d","price":%d.%02d,"volume":%d,"exchange":"NASDAQ","currency":"USD","updated_at":"2026-11-28T01:%02d:%02dZ"}`,
			i*8+j, j, 100+i%50, j*7%100, 1000+i*j, i%60, j*5%60)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// TestCompressedFanOut: clients that offer permessage-deflate get every
// publication of a fan-out, in order, compressed (RSV1, a third of the
// bytes or less) where it is over the minimum size and as it is under it;
// their own compressed commands are read; a client that offers nothing
// and one on protobuf share the node. On every engine.
func TestCompressedFanOut(t *testing.T) {
	brokers(t, func(t *testing.T, b testBroker) {
		cfg := b.config(t, gyre.Config{})
		cfg.Channels.WithoutNamespace.AllowSubscribeForClient = true
		n, url := newCompressionNode(t, cfg, gyre.WebsocketConfig{Compression: true, CompressionMinSize: 200})
		tok := connToken(t, "u", 0, nil)
		var clients []*testClient
		for _, c := range []struct {
			proto   protocol.Type
			deflate bool
		}{{protocol.TypeJSON, true}, {protocol.TypeJSON, true}, {protocol.TypeProtobuf, true}, {protocol.TypeJSON, false}, {protocol.TypeProtobuf, false}} {
			var opts []wstest.Option
			if c.deflate {
				opts = append(opts, wstest.Deflate())
			}
			cl := dial(t, url, c.proto, opts...)
			ok, answer := cl.Negotiated()
			if ok != c.deflate {
				t.Fatalf("negotiated = %v (answer %q), want %v", ok, answer, c.deflate)
			}
			if ok && answer != "permessage-deflate; server_no_context_takeover; client_no_context_takeover" {
				t.Errorf("answer = %q", answer)
			}
			cl.connect(tok)
			cl.MustSubscribe("feed")
			clients = append(clients, cl)
		}
		const pubs = 20
		var want [][]byte
		for i := range pubs {
			data := feedItem(i)
			if i%5 == 4 {
				data = []byte(fmt.Sprintf(`{"tick":%d}`, i)) // under the minimum size
			}
			want = append(want, data)
			if _, err := n.Publish("feed", data); err != nil {
				t.Fatal(err)
			}
		}
		for i, cl := range clients {
			got := cl.WaitPubs("feed", pubs)
			for j, p := range got {
				if !bytes.Equal(p.Data, want[j]) {
					t.Fatalf("client %d, publication %d: data %q, want %q", i, j, p.Data, want[j])
				}
			}
			if ok, _ := cl.Negotiated(); !ok {
				continue
			}
			w := cl.Wire()
			// 16 publications over the minimum size; the connect and
			// subscribe replies may be under it.
			if w.Compressed < 16 {
				t.Errorf("client %d: %d compressed messages of %d, want at least 16", i, w.Compressed, w.Messages)
			}
			if w.Compressed == w.Messages {
				t.Errorf("client %d: all %d messages compressed, the small ones too", i, w.Messages)
			}
			if 3*w.WireBytes > w.InflatedBytes {
				t.Errorf("client %d: %d bytes on the wire for %d inflated, want a third or less", i, w.WireBytes, w.InflatedBytes)
			}
		}
	})
}
