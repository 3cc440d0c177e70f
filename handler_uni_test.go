package gyre_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
)

// uniStreams are the unidirectional HTTP transports and how a client
// opens them.
var uniStreams = []struct {
	name      string
	transport string
	post      bool
}{
	{"uni_http_stream", "uni_http_stream", true},
	{"uni_sse get", "uni_sse", false},
	{"uni_sse post", "uni_sse", true},
}

// TestUniStreams: the connect push comes first (ping advertised, no pong),
// publications of server-side subscriptions come as bare pushes, and a
// disconnect push comes before the server ends the stream.
func TestUniStreams(t *testing.T) {
	for _, tt := range uniStreams {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTransportServer(t, gyre.Config{}, transportOptions{})
			tok := connToken(t, "hal", 0, map[string]any{"channels": []string{"news"}})
			u := openUni(t, s.url, tt.transport, `{"token":"`+tok+`","name":"curl"}`, tt.post)
			p, _ := u.next()
			if p.Connect == nil || p.Connect.Client == "" {
				t.Fatalf("first push %v, want connect", p)
			}
			if p.Connect.Ping != 25 || p.Connect.Pong {
				t.Errorf("connect push ping %d pong %v, want 25 false", p.Connect.Ping, p.Connect.Pong)
			}
			if _, ok := p.Connect.Subs["news"]; !ok {
				t.Errorf("connect push subs %v, want news", p.Connect.Subs)
			}
			if _, err := s.node.Publish("news", []byte(`{"text":"hi"}`)); err != nil {
				t.Fatal(err)
			}
			pub, raw := u.next()
			if !bytes.HasPrefix(raw, []byte(`{"channel":"news","pub":{`)) || string(pub.Pub.Data) != `{"text":"hi"}` {
				t.Errorf("publication %s, want a bare push", raw)
			}
			if err := s.node.Disconnect("hal", nil, gyre.ClientFilter{}, nil); err != nil {
				t.Fatal(err)
			}
			d := u.nextNonPing()
			if d.Disconnect == nil || d.Disconnect.Code != 3503 || d.Disconnect.Reconnect {
				t.Errorf("push %v, want disconnect 3503 without reconnect", d)
			}
			if msg, err := u.read(); err != io.EOF {
				t.Errorf("after the disconnect: %q, %v; want EOF", msg, err)
			}
		})
	}
}

// TestUniConnectRefused: a refused connect is a disconnect push (the
// client reads no error replies), then the end of the stream.
func TestUniConnectRefused(t *testing.T) {
	expired := connToken(t, "ivy", 0, map[string]any{"exp": time.Now().Add(-time.Minute).Unix()})
	early := connToken(t, "ivy", 0, map[string]any{"nbf": time.Now().Add(time.Hour).Unix()})
	forged := signWith(t, "another-secret", map[string]any{"sub": "ivy"})
	tests := []struct {
		name    string
		connect string
		code    uint32
	}{
		{"bad token", `{"token":"bad"}`, 3500},
		{"bad signature", `{"token":"` + forged + `"}`, 3500},
		// A uni client reads no error replies: 109 becomes 3005, after
		// which it reconnects, with a fresh token if it has one.
		{"expired token", `{"token":"` + expired + `"}`, 3005},
		{"token not valid yet", `{"token":"` + early + `"}`, 3005},
		{"no credentials", `{}`, 3501},
	}
	s := newTransportServer(t, gyre.Config{}, transportOptions{})
	for _, tr := range uniStreams {
		for _, tt := range tests {
			t.Run(tr.name+"/"+tt.name, func(t *testing.T) {
				u := openUni(t, s.url, tr.transport, tt.connect, tr.post)
				p, _ := u.next()
				if p.Disconnect == nil || p.Disconnect.Code != tt.code {
					t.Errorf("push %v, want disconnect %d", p, tt.code)
				}
				if msg, err := u.read(); err != io.EOF {
					t.Errorf("after the disconnect: %q, %v; want EOF", msg, err)
				}
			})
		}
	}
}

// TestUniPings: unidirectional connections get "{}" pings and stay open
// without answering them.
func TestUniPings(t *testing.T) {
	t.Parallel()
	s := newTransportServer(t, gyre.Config{PingInterval: 2 * time.Second, PongTimeout: time.Second}, transportOptions{})
	tok := connToken(t, "jay", 0, map[string]any{"channels": []string{"news"}})
	u := openUni(t, s.url, "uni_http_stream", `{"token":"`+tok+`"}`, true)
	if p, _ := u.next(); p.Connect == nil || p.Connect.Ping != 2 {
		t.Fatalf("first push %v, want connect with ping 2", p)
	}
	for i := 0; i < 2; i++ {
		if _, raw := u.next(); string(raw) != "{}" {
			t.Fatalf("push %s, want a ping", raw)
		}
	}
	if _, err := s.node.Publish("news", []byte(`1`)); err != nil {
		t.Fatal(err)
	}
	if p := u.nextNonPing(); p.Pub == nil {
		t.Errorf("push %v after pings, want the publication", p)
	}
}

// TestStreamBadRequests: malformed and oversized requests to the
// streaming endpoints get 4xx answers with a message, not a stream.
func TestStreamBadRequests(t *testing.T) {
	s := newTransportServer(t, gyre.Config{}, transportOptions{stream: gyre.StreamConfig{MaxRequestBodySize: 256}})
	big := strings.Repeat("x", 300)
	tests := []struct {
		name, method, path, ct, body string
		want                         int
	}{
		{"http_stream get", http.MethodGet, "/connection/http_stream", "", "", http.StatusMethodNotAllowed},
		{"http_stream empty", http.MethodPost, "/connection/http_stream", "application/json", "", http.StatusBadRequest},
		{"http_stream malformed", http.MethodPost, "/connection/http_stream", "application/json", `{"id":1,"connect":`, http.StatusBadRequest},
		{"http_stream protobuf garbage", http.MethodPost, "/connection/http_stream", "application/octet-stream", "\x05\xff", http.StatusBadRequest},
		{"http_stream too large", http.MethodPost, "/connection/http_stream", "application/json", `{"id":1,"connect":{"token":"` + big + `"}}`, http.StatusRequestEntityTooLarge},
		{"sse post", http.MethodPost, "/connection/sse", "application/json", "{}", http.StatusMethodNotAllowed},
		{"sse without cf_connect", http.MethodGet, "/connection/sse", "", "", http.StatusBadRequest},
		{"sse malformed cf_connect", http.MethodGet, "/connection/sse?cf_connect=%7Bnope", "", "", http.StatusBadRequest},
		{"sse cf_connect too large", http.MethodGet, "/connection/sse?cf_connect=" + big, "", "", http.StatusRequestEntityTooLarge},
		{"uni_http_stream get", http.MethodGet, "/connection/uni_http_stream", "", "", http.StatusMethodNotAllowed},
		{"uni_http_stream array", http.MethodPost, "/connection/uni_http_stream", "application/json", "[]", http.StatusBadRequest},
		{"uni_http_stream wrong type", http.MethodPost, "/connection/uni_http_stream", "application/json", `{"token":5}`, http.StatusBadRequest},
		{"uni_http_stream two objects", http.MethodPost, "/connection/uni_http_stream", "application/json", `{} {}`, http.StatusBadRequest},
		{"uni_http_stream smuggled command", http.MethodPost, "/connection/uni_http_stream", "application/json", `{},"publish":{"channel":"x"}`, http.StatusBadRequest},
		{"uni_http_stream too large", http.MethodPost, "/connection/uni_http_stream", "application/json", `{"token":"` + big + `"}`, http.StatusRequestEntityTooLarge},
		{"uni_sse put", http.MethodPut, "/connection/uni_sse", "application/json", "{}", http.StatusMethodNotAllowed},
		{"uni_sse malformed cf_connect", http.MethodGet, "/connection/uni_sse?cf_connect=nope", "", "", http.StatusBadRequest},
		{"uni_sse cf_connect too large", http.MethodGet, "/connection/uni_sse?cf_connect=" + big, "", "", http.StatusRequestEntityTooLarge},
		{"uni_sse post too large", http.MethodPost, "/connection/uni_sse", "application/json", big, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, s.url+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.ct != "" {
				req.Header.Set("Content-Type", tt.ct)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d (%s), want %d", resp.StatusCode, bytes.TrimSpace(body), tt.want)
			}
			if len(bytes.TrimSpace(body)) == 0 {
				t.Error("no message in the answer")
			}
		})
	}
	if n := s.node.LocalInfo().NumClients; n != 0 {
		t.Errorf("%d clients connected by bad requests", n)
	}
}

// TestUniHTTPStreamCurl reads the stream with curl -N, the way the
// protocol's documentation shows it.
func TestUniHTTPStreamCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl")
	}
	s := newTransportServer(t, gyre.Config{}, transportOptions{})
	tok := connToken(t, "kim", 0, map[string]any{"channels": []string{"news"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, curl, "-sN", "-X", "POST", "-d", `{"token":"`+tok+`"}`, s.url+"/connection/uni_http_stream")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	next := func() []byte {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("curl output ended: %v", lines.Err())
		}
		return lines.Bytes()
	}
	p, err := protocol.DecodePush(protocol.TypeJSON, next())
	if err != nil || p.Connect == nil {
		t.Fatalf("first line: %v, %v", p, err)
	}
	if _, err := s.node.Publish("news", []byte(`{"text":"via curl"}`)); err != nil {
		t.Fatal(err)
	}
	line := next()
	for string(line) == "{}" {
		line = next()
	}
	if !bytes.HasPrefix(line, []byte(`{"channel":"news","pub":{"data":{"text":"via curl"}`)) {
		t.Errorf("line %s, want a publication push", line)
	}
}
