package gyre_test

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
)

// bigPublish is a JSON publish command of exactly size bytes.
func bigPublish(id, size int) []byte {
	head := `{"id":` + strconv.Itoa(id) + `,"publish":{"channel":"news","data":"`
	tail := `"}}`
	return []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail)
}

// bigProtoPublish is a framed protobuf publish command of at least size
// bytes.
func bigProtoPublish(size int) []byte {
	b, err := protocol.AppendCommand(nil, protocol.TypeProtobuf, &protocol.Command{
		Id: 2, Publish: &protocol.PublishRequest{Channel: "news", Data: bytes.Repeat([]byte("x"), size)},
	})
	if err != nil {
		panic(err)
	}
	return protocol.JoinFrame(nil, protocol.TypeProtobuf, [][]byte{b})
}

// writeFragments sends one message split into frames. It stops at the
// first write error: the server may close before the last fragment.
func writeFragments(c *testClient, op ws.OpCode, parts ...[]byte) {
	for i, p := range parts {
		f := ws.NewFrame(ws.OpContinuation, i == len(parts)-1, p)
		if i == 0 {
			f.Header.OpCode = op
		}
		if err := ws.WriteFrame(c.Conn(), ws.MaskFrame(f)); err != nil {
			return
		}
	}
}

func TestBadInputCloses(t *testing.T) {
	connectCmd := func(c *testClient) {
		c.connect(connToken(t, "42", 0, nil))
	}
	jsonFrame := func(s string) func(c *testClient) {
		return func(c *testClient) { c.WriteFrame([]byte(s)) }
	}
	rawFrame := func(b []byte) func(c *testClient) {
		return func(c *testClient) { c.WriteFrame(b) }
	}
	tests := []struct {
		name  string
		proto protocol.Type
		setup func(c *testClient)
		send  func(c *testClient)
		code  ws.StatusCode
	}{
		{"malformed JSON", protocol.TypeJSON, nil, jsonFrame(`{"id":1,"connect":`), 3501},
		{"malformed JSON after connect", protocol.TypeJSON, connectCmd, jsonFrame(`{"id":2,"subscribe":{"channel":}}`), 3501},
		{"JSON array", protocol.TypeJSON, nil, jsonFrame(`[{"id":1}]`), 3501},
		{"JSON wrong type", protocol.TypeJSON, nil, jsonFrame(`{"id":"one","connect":{}}`), 3501},
		{"JSON negative id", protocol.TypeJSON, connectCmd, jsonFrame(`{"id":-2,"ping":{}}`), 3501},
		{"JSON bad data", protocol.TypeJSON, connectCmd, jsonFrame(`{"id":2,"publish":{"channel":"news","data":{bad}}}`), 3501},
		{"JSON garbage after a good command", protocol.TypeJSON, connectCmd, jsonFrame("{\"id\":2,\"ping\":{}}\n}{"), 3501},
		{"protobuf garbage", protocol.TypeProtobuf, nil, rawFrame([]byte{0x03, 0xff, 0xff, 0xff}), 3501},
		{"protobuf wrong wire type", protocol.TypeProtobuf, connectCmd, rawFrame([]byte{0x02, 0x0f, 0x01}), 3501},
		{"protobuf length past the end", protocol.TypeProtobuf, nil, rawFrame([]byte{0x40, 0x08, 0x01}), 3501},
		{"protobuf length overflow", protocol.TypeProtobuf, nil, rawFrame(bytes.Repeat([]byte{0xff}, 11)), 3501},
		{"protobuf length past the end after connect", protocol.TypeProtobuf, connectCmd, rawFrame([]byte{0x02, 0x08, 0x05, 0x7f}), 3501},
		{"subscribe before connect", protocol.TypeJSON, nil, jsonFrame(`{"id":1,"subscribe":{"channel":"news"}}`), 3501},
		{"subscribe before connect protobuf", protocol.TypeProtobuf, nil, func(c *testClient) {
			c.Send(&protocol.Command{Id: 1, Subscribe: &protocol.SubscribeRequest{Channel: "news"}})
		}, 3501},
		{"empty command before connect", protocol.TypeJSON, nil, jsonFrame(`{"id":1}`), 3501},
		{"pong before connect", protocol.TypeJSON, nil, jsonFrame(`{}`), 3501},
		{"connect without id", protocol.TypeJSON, nil, func(c *testClient) {
			c.Send(&protocol.Command{Connect: &protocol.ConnectRequest{Token: connToken(t, "42", 0, nil)}})
		}, 3501},
		{"second connect", protocol.TypeJSON, connectCmd, func(c *testClient) {
			c.Send(&protocol.Command{Id: 9, Connect: &protocol.ConnectRequest{Token: connToken(t, "42", 0, nil)}})
		}, 3501},
		{"second connect protobuf", protocol.TypeProtobuf, connectCmd, func(c *testClient) {
			c.Send(&protocol.Command{Id: 9, Connect: &protocol.ConnectRequest{Token: connToken(t, "42", 0, nil)}})
		}, 3501},
		{"publish without id", protocol.TypeJSON, connectCmd, jsonFrame(`{"publish":{"channel":"news","data":{}}}`), 3501},
		{"binary frame on a JSON connection", protocol.TypeJSON, connectCmd, func(c *testClient) {
			_ = wsutil.WriteClientMessage(c.Conn(), ws.OpBinary, []byte(`{"id":2,"ping":{}}`))
		}, 3506},
		{"binary frame on a JSON connection before connect", protocol.TypeJSON, nil, func(c *testClient) {
			_ = wsutil.WriteClientMessage(c.Conn(), ws.OpBinary, []byte{0x00})
		}, 3506},
	}
	n, url, logs, bystander := newBadInputNode(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, url, tt.proto)
			if tt.setup != nil {
				tt.setup(c)
			}
			tt.send(c)
			if ce := c.WaitClose(); ce.Code != tt.code {
				t.Fatalf("close code %d (%s), want %d", ce.Code, ce.Reason, tt.code)
			}
			if rs := logs.Find(slog.LevelInfo, frameRejected, map[string]string{"remote": c.Conn().LocalAddr().String()}); len(rs) > 0 {
				t.Errorf("bad input of the protocol logged as a bad frame: %v", rs[0].Attrs)
			}
			checkServing(t, n, url, bystander)
		})
	}
}

// frameRejected is the message of the log line for a frame the WebSocket
// layer refused.
const frameRejected = "websocket frame rejected"

// TestBadFramesClose sends frames and messages that break RFC 6455: each
// closes the connection with the RFC's status code (not the protocol's
// 3501, which is for commands that do not decode) and is logged with its
// cause and the client's address.
func TestBadFramesClose(t *testing.T) {
	connectCmd := func(c *testClient) {
		c.connect(connToken(t, "42", 0, nil))
	}
	send := func(b []byte) func(c *testClient) {
		return func(c *testClient) { _, _ = c.Conn().Write(b) }
	}
	fragments := func(op ws.OpCode, parts ...[]byte) func(c *testClient) {
		return func(c *testClient) { writeFragments(c, op, parts...) }
	}
	const fin = 0x80
	text, binary, cont := byte(ws.OpText), byte(ws.OpBinary), byte(ws.OpContinuation)
	ping, closeOp := byte(ws.OpPing), byte(ws.OpClose)
	// RSV1 is a compressed message on a connection that negotiated
	// permessage-deflate (GYRE_TEST_DEFLATE); RSV2 never means anything.
	reserved := byte(0x40)
	if testDeflate {
		reserved = 0x20
	}
	tests := []struct {
		name    string
		proto   protocol.Type
		setup   func(c *testClient)
		send    func(c *testClient)
		code    ws.StatusCode
		wantLog []string // in the logged error
	}{
		{"oversized frame", protocol.TypeJSON, connectCmd, send(wstest.MaskedFrame(fin|text, bigPublish(2, 64<<10+1))), 1009, []string{"65537 bytes", "limit 65536"}},
		{"oversized frame before connect", protocol.TypeJSON, nil, send(wstest.MaskedFrame(fin|text, bigPublish(2, 1<<20))), 1009, []string{"1048576 bytes", "limit 65536"}},
		{"oversized frame protobuf", protocol.TypeProtobuf, connectCmd, send(wstest.MaskedFrame(fin|binary, bigProtoPublish(64<<10))), 1009, []string{"message too large", "limit 65536"}},
		{"oversized fragmented message", protocol.TypeJSON, connectCmd, func(c *testClient) {
			msg := bigPublish(2, 100<<10)
			writeFragments(c, ws.OpText, msg[:40<<10], msg[40<<10:80<<10], msg[80<<10:])
		}, 1009, []string{"limit 65536"}},
		{"unmasked frame", protocol.TypeJSON, connectCmd, send([]byte{fin | text, 2, '{', '}'}), 1002, []string{"unmasked"}},
		{"unmasked frame before connect", protocol.TypeJSON, nil, send([]byte{fin | text, 2, '{', '}'}), 1002, []string{"unmasked"}},
		{"reserved bit", protocol.TypeJSON, connectCmd, send(wstest.MaskedFrame(fin|reserved|text, []byte("{}"))), 1002, []string{"reserved bits"}},
		{"reserved opcode", protocol.TypeJSON, connectCmd, send(wstest.MaskedFrame(fin|0x3, []byte("{}"))), 1002, []string{"reserved opcode"}},
		{"fragmented ping", protocol.TypeJSON, connectCmd, send(wstest.MaskedFrame(ping, nil)), 1002, []string{"fragmented control frame"}},
		{"ping over 125 bytes", protocol.TypeJSON, connectCmd, send(wstest.MaskedFrame(fin|ping, make([]byte, 126))), 1002, []string{"over 125 bytes"}},
		{"continuation without a start", protocol.TypeJSON, connectCmd, send(wstest.MaskedFrame(fin|cont, []byte("{}"))), 1002, []string{"continuation"}},
		{"new message inside a fragmented one", protocol.TypeJSON, connectCmd, func(c *testClient) {
			_, _ = c.Conn().Write(append(wstest.MaskedFrame(text, []byte("{")), wstest.MaskedFrame(fin|text, []byte("}"))...))
		}, 1002, []string{"inside a fragmented message"}},
		{"length over 63 bits", protocol.TypeJSON, connectCmd, send([]byte{fin | binary, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4}), 1002, []string{"63 bits"}},
		{"close code that may not be sent", protocol.TypeJSON, connectCmd, send(wstest.MaskedFrame(fin|closeOp, []byte{0x03, 0xed})), 1002, []string{"close code 1005"}},
		{"one-byte close", protocol.TypeJSON, connectCmd, send(wstest.MaskedFrame(fin|closeOp, []byte{0x03})), 1002, []string{"one-byte close"}},
		{"invalid UTF-8 in a text frame", protocol.TypeJSON, connectCmd, send(wstest.MaskedFrame(fin|text, []byte("{\"id\":2,\"publish\":{\"channel\":\"news\",\"data\":\"\xff\xfe\"}}"))), 1007, []string{"UTF-8"}},
		{"invalid UTF-8 split across fragments", protocol.TypeJSON, connectCmd, fragments(ws.OpText, []byte("{\"id\":2,\"ping\":{}}\xe2"), []byte("\x28\xa1")), 1007, []string{"UTF-8"}},
		{"invalid UTF-8 in a close reason", protocol.TypeJSON, connectCmd, send(wstest.MaskedFrame(fin|closeOp, []byte{0x03, 0xe8, 0xff})), 1007, []string{"UTF-8"}},
	}
	n, url, logs, bystander := newBadInputNode(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, url, tt.proto)
			var client string
			if tt.setup != nil {
				tt.setup(c)
				client = c.Replies()[1].Connect.Client
			}
			tt.send(c)
			if ce := c.WaitClose(); ce.Code != tt.code {
				t.Fatalf("close code %d (%s), want %d", ce.Code, ce.Reason, tt.code)
			}
			// The line is logged, at Info, before the close frame is written.
			rs := logs.Find(slog.LevelInfo, frameRejected, map[string]string{"remote": c.Conn().LocalAddr().String()})
			if len(rs) == 0 {
				t.Fatalf("no %q line at Info for this connection", frameRejected)
			}
			r := rs[0]
			if r.Attr("code") != strconv.Itoa(int(tt.code)) || r.Attr("client") == "" || client != "" && r.Attr("client") != client {
				t.Errorf("logged %v, want code %d and client %q", r.Attrs, tt.code, client)
			}
			for _, want := range tt.wantLog {
				if !strings.Contains(r.Attr("error"), want) {
					t.Errorf("logged error %q, want it to say %q", r.Attr("error"), want)
				}
			}
			checkServing(t, n, url, bystander)
		})
	}
}

func TestBadInputReplies(t *testing.T) {
	protoCmd := func(cmd *protocol.Command) []byte {
		b, err := protocol.AppendCommand(nil, protocol.TypeProtobuf, cmd)
		if err != nil {
			t.Fatal(err)
		}
		return protocol.JoinFrame(nil, protocol.TypeProtobuf, [][]byte{b})
	}
	tests := []struct {
		name  string
		proto protocol.Type
		frame []byte
		// id of the reply; 0 means none is due.
		id   uint32
		code uint32
	}{
		{"empty command", protocol.TypeJSON, []byte(`{"id":5}`), 5, 104},
		{"unknown command", protocol.TypeJSON, []byte(`{"id":6,"launch":{"now":true}}`), 6, 104},
		{"empty command protobuf", protocol.TypeProtobuf, protoCmd(&protocol.Command{Id: 5}), 5, 104},
		{"unknown field protobuf", protocol.TypeProtobuf, []byte{0x05, 0x08, 0x07, 0xa0, 0x06, 0x01}, 7, 104},
		{"pong", protocol.TypeJSON, []byte(`{}`), 0, 0},
		{"pong with newlines", protocol.TypeJSON, []byte("{}\n{}\n"), 0, 0},
		{"pong protobuf", protocol.TypeProtobuf, []byte{0x00}, 0, 0},
		{"frame at the size limit", protocol.TypeJSON, bigPublish(8, 64<<10), 8, 103},
		{"publish into a channel without permission", protocol.TypeJSON, []byte(`{"id":9,"publish":{"channel":"news","data":{}}}`), 9, 103},
		{"subscribe to an unknown namespace", protocol.TypeJSON, []byte(`{"id":10,"subscribe":{"channel":"nope:x"}}`), 10, 102},
		{"subscribe to a channel too long", protocol.TypeJSON, []byte(`{"id":11,"subscribe":{"channel":"` + strings.Repeat("c", 256) + `"}}`), 11, 102},
		{"sub_refresh of a channel not subscribed", protocol.TypeJSON, []byte(`{"id":12,"sub_refresh":{"channel":"news","token":"x"}}`), 12, 107},
		{"refresh without token", protocol.TypeJSON, []byte(`{"id":13,"refresh":{}}`), 13, 107},
	}
	n, url := newTestNode(t, chatConfig())
	bystander := dial(t, url, protocol.TypeJSON)
	bystander.connect(connToken(t, "bystander", 0, nil))
	if r := bystander.Subscribe(&protocol.SubscribeRequest{Channel: "news"}); r.Error != nil {
		t.Fatal(r.Error)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, url, tt.proto)
			c.connect(connToken(t, "42", 0, nil))
			c.SetLastID(100) // above every id the table uses
			c.WriteFrame(tt.frame)
			if tt.id != 0 {
				r := c.WaitReply(tt.id)
				if r.Error == nil || r.Error.Code != tt.code {
					t.Fatalf("reply %+v, want error %d", r, tt.code)
				}
			}
			// The connection still works.
			if r := c.Call(&protocol.Command{Ping: &protocol.PingRequest{}}); r.Error != nil || r.Ping == nil {
				t.Fatalf("ping after bad input: %+v", r)
			}
			for id, r := range c.Replies() {
				if id != tt.id && id != 1 && id <= 100 {
					t.Errorf("unexpected reply %d: %+v", id, r)
				}
			}
			c.Conn().Close()
			<-c.Done()
			checkServing(t, n, url, bystander)
		})
	}
}

// TestBatchOfCommands sends thousands of commands in one frame: each gets
// its reply, in order.
func TestBatchOfCommands(t *testing.T) {
	protocols(t, func(t *testing.T, proto protocol.Type) {
		_, url := newTestNode(t, chatConfig())
		c := dial(t, url, proto)
		c.connect(connToken(t, "42", 0, nil))
		const count = 3000
		cmds := make([]*protocol.Command, count)
		for i := range cmds {
			cmds[i] = &protocol.Command{Id: uint32(10 + i), Ping: &protocol.PingRequest{}}
		}
		c.Send(cmds...)
		for i := range count {
			if r := c.WaitReply(uint32(10 + i)); r.Error != nil || r.Ping == nil {
				t.Fatalf("reply %d: %+v", i, r)
			}
		}
	})
}

// checkServing checks that the node still delivers to a client connected
// before and serves a new one.
// newBadInputNode starts a node whose log is recorded, with a bystander
// subscribed to "news" for checkServing.
func newBadInputNode(t *testing.T) (*gyre.Node, string, *logtest.Recorder, *testClient) {
	t.Helper()
	logs := &logtest.Recorder{}
	cfg := chatConfig()
	cfg.Logger = slog.New(logs)
	n, url := newTestNode(t, cfg)
	bystander := dial(t, url, protocol.TypeProtobuf)
	bystander.connect(connToken(t, "bystander", 0, nil))
	if r := bystander.Subscribe(&protocol.SubscribeRequest{Channel: "news"}); r.Error != nil {
		t.Fatal(r.Error)
	}
	return n, url, logs, bystander
}

func checkServing(t *testing.T, n *gyre.Node, url string, bystander *testClient) {
	t.Helper()
	before := len(bystander.Pubs("news"))
	fresh := dial(t, url, protocol.TypeJSON)
	fresh.connect(connToken(t, "fresh", 0, nil))
	if r := fresh.Subscribe(&protocol.SubscribeRequest{Channel: "news"}); r.Error != nil {
		t.Fatalf("fresh client subscribe: %+v", r.Error)
	}
	if _, err := n.Publish("news", []byte(`{"alive":true}`)); err != nil {
		t.Fatal(err)
	}
	fresh.WaitPubs("news", 1)
	bystander.WaitPubs("news", before+1)
	fresh.Conn().Close()
	<-fresh.Done()
	waitFor(t, "fresh client gone", func() bool { return n.Info()[0].NumClients == 1 })
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
