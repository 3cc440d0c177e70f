package gyre_test

import (
	"bytes"
	"compress/flate"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/httphead"
	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsflate"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
)

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
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		cfg := b.Config(t, gyre.Config{})
		cfg.Channels.WithoutNamespace.AllowSubscribeForClient = true
		n, url := newTestNodeWS(t, cfg, gyre.WebsocketConfig{Compression: true, CompressionMinSize: 200}, nil)
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
			// Not dial: it offers compression to every client under
			// GYRE_TEST_DEFLATE.
			cl := &testClient{Client: wstest.Dial(t, url, c.proto, opts...), t: t}
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
			// subscribe replies may be under it. An engine between nodes
			// may hand several publications over as one run, which goes
			// as one message.
			if b.Name() == "memory" && w.Compressed < 16 || w.Compressed == 0 {
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

// TestCompressedUniWebsocket: a unidirectional WebSocket client that
// offers permessage-deflate gets its connect push and the publications
// compressed where they are over the minimum size, one push per message
// even with join_push_messages, each inflating (with the standard
// library's decoder) to exactly one push.
func TestCompressedUniWebsocket(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		cfg := b.Config(t, gyre.Config{})
		s := newTransportServer(t, cfg, transportOptions{uniWebsocket: gyre.UniWebsocketConfig{
			Compression: true, CompressionMinSize: 200, JoinPushMessages: true,
		}})
		tok := connToken(t, "lee", 0, map[string]any{"channels": []string{"news"}})
		u := "ws" + strings.TrimPrefix(s.url, "http") + "/connection/uni_websocket?cf_connect=" + url.QueryEscape(`{"token":"`+tok+`"}`)
		offer := httphead.Option{Name: []byte("permessage-deflate")}
		offer.Parameters.Set([]byte("client_max_window_bits"), nil)
		conn, br, hs, err := ws.Dialer{Timeout: 5 * time.Second, Extensions: []httphead.Option{offer}}.Dial(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if len(hs.Extensions) != 1 || string(hs.Extensions[0].Name) != "permessage-deflate" {
			t.Fatalf("extensions %v, want permessage-deflate", hs.Extensions)
		}
		var r io.Reader = conn
		if br != nil {
			r = br
		}
		// next reads one data message and says whether it was compressed.
		next := func() (*protocol.Push, bool) {
			t.Helper()
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			for {
				f, err := ws.ReadFrame(r)
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				if f.Header.OpCode.IsControl() {
					continue
				}
				if !f.Header.Fin {
					t.Fatal("fragmented message")
				}
				compressed := f.Header.Rsv1()
				if compressed {
					if f, err = wsflate.DecompressFrame(f); err != nil {
						t.Fatalf("inflate: %v", err)
					}
				}
				pushes, err := protocol.DecodePushes(protocol.TypeJSON, f.Payload, nil)
				if err != nil || len(pushes) != 1 {
					t.Fatalf("message %q: %d pushes, %v; want one", f.Payload, len(pushes), err)
				}
				return pushes[0], compressed
			}
		}
		if p, _ := next(); p.Connect == nil {
			t.Fatalf("first push %v, want connect", p)
		}
		small := []byte(`{"n":1}`)
		for _, d := range [][]byte{feedItem(1), small, feedItem(2)} {
			if _, err := s.node.Publish("news", d); err != nil {
				t.Fatal(err)
			}
		}
		for i, want := range [][]byte{feedItem(1), small, feedItem(2)} {
			p, compressed := next()
			if p.Pub == nil || !bytes.Equal(p.Pub.Data, want) {
				t.Fatalf("push %d: %v", i, p)
			}
			if compressed != (len(want) > 200) {
				t.Errorf("push %d of %d bytes: compressed %v", i, len(want), compressed)
			}
		}
	})
}

// TestCompressedBomb: a compressed message of a few kilobytes that would
// inflate to 64 MiB closes the connection with 1009 as soon as it passes
// the message size limit, with a log line, and the node's heap does not
// take the inflated size.
func TestCompressedBomb(t *testing.T) {
	// One MiB of zeros compressed and flushed is a run of deflate blocks
	// that ends on a byte boundary and refers to nothing before it but
	// zeros: 64 copies of it inflate to 64 MiB, without compressing that
	// much here (slow under the race detector, while the connection waits
	// for its connect).
	var z bytes.Buffer
	fw, _ := flate.NewWriter(&z, flate.BestCompression)
	_, _ = fw.Write(make([]byte, 1<<20))
	_ = fw.Flush()
	bomb := bytes.TrimSuffix(bytes.Repeat(z.Bytes(), 64), []byte{0, 0, 0xff, 0xff})
	if len(bomb) > 128<<10 {
		t.Fatalf("bomb of %d bytes, want a small one", len(bomb))
	}
	if n, err := io.Copy(io.Discard, flate.NewReader(bytes.NewReader(append(bomb, 0, 0, 0xff, 0xff, 1, 0, 0, 0xff, 0xff)))); err != nil || n != 64<<20 {
		t.Fatalf("the bomb inflates to %d bytes (%v), want 64 MiB", n, err)
	}
	logs := &logtest.Recorder{}
	_, u := newTestNodeWS(t, gyre.Config{Logger: slog.New(logs)}, gyre.WebsocketConfig{Compression: true, MessageSizeLimit: 64 << 10}, nil)
	c := dial(t, u, protocol.TypeJSON, wstest.Deflate())
	if ok, _ := c.Negotiated(); !ok {
		t.Fatal("compression not negotiated")
	}
	c.connect(connToken(t, "u", 0, nil))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := c.Conn().Write(wstest.MaskedFrame(0x80|0x40|0x1, bomb)); err != nil {
		t.Fatal(err)
	}
	if ce := c.WaitClose(); ce.Code != 1009 {
		t.Fatalf("close %d %q, want 1009", ce.Code, ce.Reason)
	}
	runtime.ReadMemStats(&after)
	c.WaitFor("the log line", func() bool {
		lines := logs.Find(slog.LevelInfo, "websocket frame rejected", map[string]string{"code": "1009"})
		return len(lines) == 1 && strings.Contains(lines[0].Attr("error"), "inflates past the limit")
	})
	// TotalAlloc counts every allocation made meanwhile, freed or not.
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 8<<20 {
		t.Errorf("%d MiB allocated while refusing the bomb, want far less than its 64 MiB", grown>>20)
	}
}

// TestCompressedDecompressedLimit: with DecompressedMessageSizeLimit a
// compressed command may inflate past MessageSizeLimit up to it (the
// command is read and answered); one that inflates past it closes the
// connection with 1009. Without it, MessageSizeLimit bounds both.
func TestCompressedDecompressedLimit(t *testing.T) {
	const limit = 4 << 10
	publish := func(size int) *protocol.Command {
		data := `{"text":"` + strings.Repeat("a", size) + `"}`
		return &protocol.Command{Publish: &protocol.PublishRequest{Channel: "closed", Data: []byte(data)}}
	}
	for _, tt := range []struct {
		name         string
		decompressed int64
		size         int
		wantClose    bool
	}{
		{name: "inflates within the decompressed limit", decompressed: 16 * limit, size: 8 * limit},
		{name: "inflates past the decompressed limit", decompressed: 16 * limit, size: 32 * limit, wantClose: true},
		{name: "no decompressed limit: the message size limit", size: 8 * limit, wantClose: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, u := newTestNodeWS(t, gyre.Config{}, gyre.WebsocketConfig{
				Compression: true, MessageSizeLimit: limit, DecompressedMessageSizeLimit: tt.decompressed,
			}, nil)
			c := dial(t, u, protocol.TypeJSON, wstest.Deflate())
			if ok, _ := c.Negotiated(); !ok {
				t.Fatal("compression not negotiated")
			}
			c.connect(connToken(t, "u", 0, nil))
			r, closed := c.TryCall(publish(tt.size))
			switch {
			case tt.wantClose && (closed == nil || closed.Code != 1009):
				t.Fatalf("reply %v, close %v: want the connection closed with 1009", r, closed)
			case !tt.wantClose && closed != nil:
				t.Fatalf("closed %d %q: want the command read and answered", closed.Code, closed.Reason)
			case !tt.wantClose && (r.Error == nil || r.Error.Code != 103):
				// Publishing into the channel is not allowed: the answer
				// shows the server read the whole command.
				t.Fatalf("reply %+v, want error 103 (permission denied)", r)
			}
		})
	}
}

// TestCompressedRun: publications handed over together (PublishMany) go
// to a compressed subscriber as one message, their pushes joined as in an
// uncompressed frame and compressed together, in order; a plain
// subscriber gets the same publications.
func TestCompressedRun(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		cfg := b.Config(t, gyre.Config{})
		cfg.Channels.WithoutNamespace.AllowSubscribeForClient = true
		n, u := newTestNodeWS(t, cfg, gyre.WebsocketConfig{Compression: true}, nil)
		tok := connToken(t, "u", 0, nil)
		var clients []*testClient
		for _, proto := range []protocol.Type{protocol.TypeJSON, protocol.TypeProtobuf} {
			for _, opts := range [][]wstest.Option{{wstest.Deflate()}, nil} {
				cl := &testClient{Client: wstest.Dial(t, u, proto, opts...), t: t}
				cl.connect(tok)
				cl.MustSubscribe("feed")
				clients = append(clients, cl)
			}
		}
		before := make([]wstest.WireStats, len(clients))
		for i, cl := range clients {
			before[i] = cl.Wire()
		}
		const runLen = 10
		items := make([]gyre.PublishItem, runLen)
		for i := range items {
			items[i] = gyre.PublishItem{Data: feedItem(i)}
		}
		publishMany(n, "feed", items)
		for _, it := range items {
			if it.Err != nil {
				t.Fatal(it.Err)
			}
		}
		for i, cl := range clients {
			got := cl.WaitPubs("feed", runLen)
			for j, p := range got {
				if !bytes.Equal(p.Data, feedItem(j)) {
					t.Fatalf("client %d, publication %d: %q", i, j, p.Data)
				}
			}
			if ok, _ := cl.Negotiated(); !ok {
				continue
			}
			w := cl.Wire()
			msgs, compressed := w.Messages-before[i].Messages, w.Compressed-before[i].Compressed
			if b.Name() == "memory" && (msgs != 1 || compressed != 1) {
				t.Errorf("client %d: the run came in %d messages, %d compressed; want one, compressed", i, msgs, compressed)
			}
			wire, inflated := w.WireBytes-before[i].WireBytes, w.InflatedBytes-before[i].InflatedBytes
			if 4*wire > inflated {
				t.Errorf("client %d: %d bytes on the wire for %d inflated, want a quarter or less", i, wire, inflated)
			}
		}
	})
}
