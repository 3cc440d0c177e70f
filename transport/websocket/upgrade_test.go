package websocket

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
)

func TestUpgradeNegotiatesFormat(t *testing.T) {
	tests := []struct {
		name       string
		query      string
		offer      []string
		want       protocol.Type
		wantAccept string
		wantOpcode ws.OpCode
	}{
		{name: "default", want: protocol.TypeJSON, wantOpcode: ws.OpText},
		{name: "subprotocol protobuf", offer: []string{SubprotocolProtobuf}, want: protocol.TypeProtobuf, wantAccept: SubprotocolProtobuf, wantOpcode: ws.OpBinary},
		{name: "subprotocol json", offer: []string{SubprotocolJSON}, want: protocol.TypeJSON, wantAccept: SubprotocolJSON, wantOpcode: ws.OpText},
		{name: "first offer wins", offer: []string{SubprotocolJSON, SubprotocolProtobuf}, want: protocol.TypeJSON, wantAccept: SubprotocolJSON, wantOpcode: ws.OpText},
		{name: "unknown offer ignored", offer: []string{"mqtt", SubprotocolProtobuf}, want: protocol.TypeProtobuf, wantAccept: SubprotocolProtobuf, wantOpcode: ws.OpBinary},
		{name: "query protobuf", query: "?cf_protocol=protobuf", want: protocol.TypeProtobuf, wantOpcode: ws.OpBinary},
		{name: "query json", query: "?cf_protocol=json", want: protocol.TypeJSON, wantOpcode: ws.OpText},
		{name: "query among others", query: "?a=1&cf_protocol=protobuf&b=2", want: protocol.TypeProtobuf, wantOpcode: ws.OpBinary},
		{name: "query unknown value", query: "?cf_protocol=xml", want: protocol.TypeJSON, wantOpcode: ws.OpText},
		{name: "subprotocol beats query", query: "?cf_protocol=protobuf", offer: []string{SubprotocolJSON}, want: protocol.TypeJSON, wantAccept: SubprotocolJSON, wantOpcode: ws.OpText},
		{name: "format protobuf", query: "?format=protobuf", want: protocol.TypeProtobuf, wantOpcode: ws.OpBinary},
		{name: "format json", query: "?format=json", want: protocol.TypeJSON, wantOpcode: ws.OpText},
		{name: "format among others", query: "?token=a.b.c&format=protobuf&x", want: protocol.TypeProtobuf, wantOpcode: ws.OpBinary},
		{name: "format escaped", query: "?form%61t=%70rotobuf", want: protocol.TypeProtobuf, wantOpcode: ws.OpBinary},
		{name: "format first value counts", query: "?format=json&format=protobuf", want: protocol.TypeJSON, wantOpcode: ws.OpText},
		{name: "either key asks protobuf", query: "?cf_protocol=json&format=protobuf", want: protocol.TypeProtobuf, wantOpcode: ws.OpBinary},
		{name: "keys that only contain the names", query: "?cf_format=protobuf&xcf_protocol=protobuf", want: protocol.TypeJSON, wantOpcode: ws.OpText},
		{name: "subprotocol beats format", query: "?format=protobuf", offer: []string{SubprotocolJSON}, want: protocol.TypeJSON, wantAccept: SubprotocolJSON, wantOpcode: ws.OpText},
	}
	for _, up := range upgraders {
		for _, tt := range tests {
			t.Run(up.name+"/"+tt.name, func(t *testing.T) {
				s := up.newServer(t, Options{})
				cl := s.dial(t, "/connection/websocket"+tt.query, tt.offer...)
				u := s.accept(t)
				if u.err != nil {
					t.Fatalf("Upgrade: %v", u.err)
				}
				if u.format != tt.want || u.conn.Protocol() != tt.want {
					t.Errorf("format %v, Protocol() %v, want %v", u.format, u.conn.Protocol(), tt.want)
				}
				if cl.hs.Protocol != tt.wantAccept {
					t.Errorf("client saw subprotocol %q, want %q", cl.hs.Protocol, tt.wantAccept)
				}
				if err := u.conn.WriteFrame([]byte("{}")); err != nil {
					t.Fatalf("WriteFrame: %v", err)
				}
				f := cl.recv()
				if f.Header.OpCode != tt.wantOpcode || !f.Header.Fin || string(f.Payload) != "{}" {
					t.Errorf("frame op=%v fin=%v payload=%q, want op=%v fin payload {}", f.Header.OpCode, f.Header.Fin, f.Payload, tt.wantOpcode)
				}
				if got, want := u.conn.RemoteAddr().String(), cl.conn.LocalAddr().String(); got != want {
					t.Errorf("RemoteAddr %s, want %s", got, want)
				}
			})
		}
	}
}

func TestUpgradeChecksOrigin(t *testing.T) {
	allow := func(r *http.Request) bool { return r.Header.Get("Origin") == "https://good.example" }
	tests := []struct {
		name       string
		check      func(*http.Request) bool
		origin     string
		wantStatus int
		wantErr    error
	}{
		{name: "allowed", check: allow, origin: "https://good.example", wantStatus: http.StatusSwitchingProtocols},
		{name: "refused", check: allow, origin: "https://evil.example", wantStatus: http.StatusForbidden, wantErr: ErrOriginNotAllowed},
		{name: "nil allows all", origin: "https://evil.example", wantStatus: http.StatusSwitchingProtocols},
	}
	for _, up := range upgraders {
		for _, tt := range tests {
			t.Run(up.name+"/"+tt.name, func(t *testing.T) {
				s := up.newServer(t, Options{CheckOrigin: tt.check})
				h := handshakeHeaders()
				h.Set("Origin", tt.origin)
				status := rawHandshake(t, s, http.MethodGet, h)
				if status != tt.wantStatus {
					t.Errorf("status %d, want %d", status, tt.wantStatus)
				}
				u := s.accept(t)
				if !errors.Is(u.err, tt.wantErr) || (tt.wantErr == nil) != (u.err == nil) {
					t.Errorf("Upgrade error %v, want %v", u.err, tt.wantErr)
				}
				if u.conn != nil {
					_ = u.conn.Close(1000, "")
				}
			})
		}
	}
}

func TestUpgradeRejectsBadHandshake(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		edit       func(http.Header)
		wantStatus int
	}{
		{name: "plain GET", method: http.MethodGet, edit: func(h http.Header) { h.Del("Upgrade"); h.Del("Connection") }, wantStatus: http.StatusBadRequest},
		{name: "no key", method: http.MethodGet, edit: func(h http.Header) { h.Del("Sec-WebSocket-Key") }, wantStatus: http.StatusBadRequest},
		{name: "short key", method: http.MethodGet, edit: func(h http.Header) { h.Set("Sec-WebSocket-Key", "abc") }, wantStatus: http.StatusBadRequest},
		{name: "no version", method: http.MethodGet, edit: func(h http.Header) { h.Del("Sec-WebSocket-Version") }, wantStatus: http.StatusBadRequest},
		{name: "old version", method: http.MethodGet, edit: func(h http.Header) { h.Set("Sec-WebSocket-Version", "8") }, wantStatus: http.StatusUpgradeRequired},
		{name: "POST", method: http.MethodPost, edit: func(http.Header) {}, wantStatus: http.StatusMethodNotAllowed},
	}
	for _, up := range upgraders {
		for _, tt := range tests {
			t.Run(up.name+"/"+tt.name, func(t *testing.T) {
				s := up.newServer(t, Options{})
				h := handshakeHeaders()
				tt.edit(h)
				if status := rawHandshake(t, s, tt.method, h); status != tt.wantStatus {
					t.Errorf("status %d, want %d", status, tt.wantStatus)
				}
				u := s.accept(t)
				if !errors.Is(u.err, ErrBadHandshake) {
					t.Errorf("Upgrade error %v, want ErrBadHandshake", u.err)
				}
			})
		}
	}
}

// TestUpgradeKeepsPipelinedFrames sends a frame in the same write as the
// handshake, so that it lands in the HTTP server's buffer.
func TestUpgradeKeepsPipelinedFrames(t *testing.T) {
	tests := []struct {
		name     string
		payloads []string
	}{
		{name: "one small", payloads: []string{`{"id":1}`}},
		{name: "several", payloads: []string{`{"id":1}`, `{"id":2}`, strings.Repeat("x", 300)}},
		{name: "larger than the small buffer", payloads: []string{strings.Repeat("y", 2000)}},
	}
	for _, up := range upgraders {
		for _, tt := range tests {
			t.Run(up.name+"/"+tt.name, func(t *testing.T) {
				s := up.newServer(t, Options{})
				var frames [][]byte
				for _, p := range tt.payloads {
					frames = append(frames, wstest.MaskedFrame(0x80|byte(ws.OpText), []byte(p)))
				}
				dialPipelined(t, s, frames...)
				u := s.accept(t)
				if u.err != nil {
					t.Fatalf("Upgrade: %v", u.err)
				}
				defer u.conn.Close(1000, "")
				for _, want := range tt.payloads {
					got, _ := mustRead(t, u.conn)
					if string(got) != want {
						t.Fatalf("got %q, want %q", got, want)
					}
				}
			})
		}
	}
}

// dialPipelined sends a handshake with frames right behind it, in one
// write, and returns the client's connection.
func dialPipelined(t *testing.T, s *testServer, frames ...[]byte) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	var b bytes.Buffer
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/connection/websocket", nil)
	req.Header = handshakeHeaders()
	_ = req.Write(&b)
	for _, f := range frames {
		b.Write(f)
	}
	if _, err := nc.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	return nc
}

func handshakeHeaders() http.Header {
	h := http.Header{}
	h.Set("Upgrade", "websocket")
	h.Set("Connection", "Upgrade")
	h.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	h.Set("Sec-WebSocket-Version", "13")
	return h
}

// rawHandshake sends a handshake request by hand and returns the status.
func rawHandshake(t *testing.T, s *testServer, method string, h http.Header) int {
	t.Helper()
	nc, err := net.Dial("tcp", s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	req, err := http.NewRequest(method, s.URL+"/connection/websocket", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	if err := req.Write(nc); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(nc), req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestUpgradeSubprotocolHeader sends Sec-WebSocket-Protocol lines as
// clients write them, each value on a line of its own, and checks the
// handshake is accepted with the subprotocol a lenient reading of the list
// finds.
func TestUpgradeSubprotocolHeader(t *testing.T) {
	tests := []struct {
		name       string
		values     []string // one header line each
		query      string
		want       protocol.Type
		wantAccept string
	}{
		{name: "empty", values: []string{""}, want: protocol.TypeJSON},
		{name: "empty with format=protobuf", values: []string{""}, query: "?format=protobuf", want: protocol.TypeProtobuf},
		{name: "empty with cf_protocol=protobuf", values: []string{""}, query: "?cf_protocol=protobuf", want: protocol.TypeProtobuf},
		{name: "blank", values: []string{"   "}, want: protocol.TypeJSON},
		{name: "tab", values: []string{"\t"}, want: protocol.TypeJSON},
		{name: "only commas", values: []string{" , ,"}, want: protocol.TypeJSON},
		{name: "trailing empty element", values: []string{SubprotocolJSON + ", "}, want: protocol.TypeJSON, wantAccept: SubprotocolJSON},
		{name: "leading empty element", values: []string{", " + SubprotocolProtobuf}, want: protocol.TypeProtobuf, wantAccept: SubprotocolProtobuf},
		{name: "empty element between", values: []string{"mqtt,,\t, " + SubprotocolProtobuf}, want: protocol.TypeProtobuf, wantAccept: SubprotocolProtobuf},
		{name: "no space after comma", values: []string{"mqtt," + SubprotocolProtobuf}, want: protocol.TypeProtobuf, wantAccept: SubprotocolProtobuf},
		{name: "repeated, empty first", values: []string{"", SubprotocolProtobuf}, want: protocol.TypeProtobuf, wantAccept: SubprotocolProtobuf},
		{name: "repeated, first line wins", values: []string{SubprotocolProtobuf, SubprotocolJSON}, want: protocol.TypeProtobuf, wantAccept: SubprotocolProtobuf},
		{name: "repeated, unknown first", values: []string{"mqtt", SubprotocolJSON}, want: protocol.TypeJSON, wantAccept: SubprotocolJSON},
		{name: "unknown only", values: []string{"mqtt, wamp"}, want: protocol.TypeJSON},
		{name: "not a token list", values: []string{"centrifuge-protobuf;q=1"}, want: protocol.TypeJSON},
		{name: "name inside a longer one", values: []string{"x-centrifuge-protobuf, centrifuge-protobuf-v2"}, want: protocol.TypeJSON},
	}
	for _, up := range upgraders {
		for _, tt := range tests {
			t.Run(up.name+"/"+tt.name, func(t *testing.T) {
				s := up.newServer(t, Options{})
				var extra strings.Builder
				for _, v := range tt.values {
					extra.WriteString("Sec-WebSocket-Protocol:" + v + "\r\n")
				}
				resp, br := headHandshake(t, s, "/connection/websocket"+tt.query, extra.String())
				if resp.StatusCode != http.StatusSwitchingProtocols {
					t.Fatalf("status %d, want 101", resp.StatusCode)
				}
				if got := resp.Header.Values("Sec-WebSocket-Protocol"); tt.wantAccept == "" && len(got) != 0 || tt.wantAccept != "" && (len(got) != 1 || got[0] != tt.wantAccept) {
					t.Errorf("answer's Sec-WebSocket-Protocol %q, want %q", got, tt.wantAccept)
				}
				u := s.accept(t)
				if u.err != nil {
					t.Fatalf("%s: %v", u.via, u.err)
				}
				defer u.conn.Close(1000, "")
				if u.format != tt.want {
					t.Errorf("format %v, want %v", u.format, tt.want)
				}
				if err := u.conn.WriteFrame([]byte("{}")); err != nil {
					t.Fatal(err)
				}
				f, err := ws.ReadFrame(br)
				if err != nil {
					t.Fatal(err)
				}
				wantOp := ws.OpText
				if tt.want == protocol.TypeProtobuf {
					wantOp = ws.OpBinary
				}
				if f.Header.OpCode != wantOp {
					t.Errorf("frame opcode %v, want %v", f.Header.OpCode, wantOp)
				}
			})
		}
	}
}

// headHandshake writes a handshake request head by hand, with extra header
// lines (each ending in CRLF) as given, and reads the answer's head. The
// reader goes on with what the server sends after it.
func headHandshake(t *testing.T, s *testServer, pathQuery, extra string) (*http.Response, *bufio.Reader) {
	t.Helper()
	_, resp, br := rawDial(t, s, pathQuery, extra)
	return resp, br
}

// rawDial is headHandshake that also returns the client's connection.
func rawDial(t testing.TB, s *testServer, pathQuery, extra string) (net.Conn, *http.Response, *bufio.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	head := "GET " + pathQuery + " HTTP/1.1\r\nHost: " + s.Listener.Addr().String() +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13" +
		"\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" + extra + "\r\n"
	if _, err := nc.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(hangTimeout))
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return nc, resp, br
}

// TestNegotiationAllocations keeps the format choice free of allocations
// for the handshakes nearly every client makes.
func TestNegotiationAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	tests := []struct {
		name       string
		offer      []byte
		rawQuery   string
		wantFormat protocol.Type
		wantProto  string
	}{
		{name: "nothing", wantFormat: protocol.TypeJSON},
		{name: "token in the query", rawQuery: "token=eyJhbGciOiJIUzI1NiJ9.e30.c2ln&name=js", wantFormat: protocol.TypeJSON},
		{name: "format in the query", rawQuery: "token=x&format=protobuf", wantFormat: protocol.TypeProtobuf},
		{name: "subprotocol", offer: []byte("centrifuge-json, centrifuge-protobuf"), wantFormat: protocol.TypeJSON, wantProto: SubprotocolJSON},
		{name: "empty subprotocol", offer: []byte(""), wantFormat: protocol.TypeJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var format protocol.Type
			var sub string
			offer := string(tt.offer)
			allocs := testing.AllocsPerRun(100, func() {
				sub = selectSubprotocol(tt.offer)
				if s := selectSubprotocol(offer); s != sub {
					t.Fatalf("string offer selects %q, bytes %q", s, sub)
				}
				format = negotiateFormat(sub, tt.rawQuery)
			})
			if allocs != 0 {
				t.Errorf("%v allocations, want 0", allocs)
			}
			if format != tt.wantFormat || sub != tt.wantProto {
				t.Errorf("format %v, subprotocol %q, want %v, %q", format, sub, tt.wantFormat, tt.wantProto)
			}
		})
	}
}

// TestUpgradeExtraHeader checks Options.Header goes out with the answer,
// beside the negotiated subprotocol, and is left as it was.
func TestUpgradeExtraHeader(t *testing.T) {
	for _, up := range upgraders {
		for _, offer := range []string{"", SubprotocolProtobuf} {
			t.Run(up.name+"/"+offer, func(t *testing.T) {
				extra := http.Header{"Set-Cookie": {"a=1"}}
				s := up.newServer(t, Options{Header: extra})
				line := ""
				if offer != "" {
					line = "Sec-WebSocket-Protocol: " + offer + "\r\n"
				}
				resp, _ := headHandshake(t, s, "/connection/websocket", line)
				if resp.StatusCode != http.StatusSwitchingProtocols {
					t.Fatalf("status %d, want 101", resp.StatusCode)
				}
				if got := resp.Header.Values("Set-Cookie"); len(got) != 1 || got[0] != "a=1" {
					t.Errorf("Set-Cookie %q, want [a=1]", got)
				}
				if got := resp.Header.Values("Sec-WebSocket-Protocol"); offer == "" && len(got) != 0 || offer != "" && (len(got) != 1 || got[0] != offer) {
					t.Errorf("Sec-WebSocket-Protocol %q, want %q", got, offer)
				}
				if u := s.accept(t); u.err != nil {
					t.Fatal(u.err)
				} else {
					_ = u.conn.Close(1000, "")
				}
				if len(extra) != 1 {
					t.Errorf("Options.Header changed: %v", extra)
				}
			})
		}
	}
}
