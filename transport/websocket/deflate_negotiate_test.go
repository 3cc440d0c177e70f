package websocket

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre/internal/wstest"
)

// Offers of permessage-deflate as real clients send them.
const (
	// Chromium and Firefox; MDN's page on Sec-WebSocket-Extensions shows
	// the browsers' request.
	offerBrowser = "permessage-deflate; client_max_window_bits"
	// Node's ws: PerMessageDeflate.offer (websockets/ws,
	// lib/permessage-deflate.js) asks for client_max_window_bits without
	// a value unless configured otherwise.
	offerNodeWS = "permessage-deflate; client_max_window_bits"
	// Python's websockets: ClientPerMessageDeflateFactory
	// (python-websockets/websockets,
	// src/websockets/extensions/permessage_deflate.py) defaults to
	// client_max_window_bits=True, sent without a value.
	offerPython = "permessage-deflate; client_max_window_bits"
	// The same, configured with server_max_window_bits=15; it refuses an
	// answer that does not echo the parameter.
	offerPythonWindow = "permessage-deflate; server_max_window_bits=15; client_max_window_bits"
	// gorilla/websocket, client.go, with Dialer.EnableCompression.
	offerGorilla = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
	// coder/websocket, compress.go (compressionOptions.String), with
	// CompressionNoContextTakeover and with CompressionContextTakeover.
	offerCoderNoContext = "permessage-deflate; client_no_context_takeover; server_no_context_takeover"
	offerCoderContext   = "permessage-deflate"
)

// negotiationCase is a Sec-WebSocket-Extensions header, one value per
// line, and how Gyre answers it with compression on.
type negotiationCase struct {
	name      string
	lines     []string
	want      deflateAnswer
	malformed bool // the header does not parse (so want is declined)
	// headOnly: net/http answers 400 to such a header line itself, so
	// only UpgradeHead sees it.
	headOnly bool
}

var negotiationCases = []negotiationCase{
	// What clients send.
	{name: "Chrome and Firefox", lines: []string{offerBrowser}, want: deflateAccepted},
	{name: "Node ws", lines: []string{offerNodeWS}, want: deflateAccepted},
	{name: "Python websockets", lines: []string{offerPython}, want: deflateAccepted},
	{name: "Python websockets with server_max_window_bits", lines: []string{offerPythonWindow}, want: deflateAcceptedWindow},
	{name: "gorilla", lines: []string{offerGorilla}, want: deflateAccepted},
	{name: "coder no context takeover", lines: []string{offerCoderNoContext}, want: deflateAccepted},
	{name: "coder context takeover", lines: []string{offerCoderContext}, want: deflateAccepted},

	// Each parameter alone, and all of them.
	{name: "server_no_context_takeover", lines: []string{"permessage-deflate; server_no_context_takeover"}, want: deflateAccepted},
	{name: "client_no_context_takeover", lines: []string{"permessage-deflate; client_no_context_takeover"}, want: deflateAccepted},
	{name: "client_max_window_bits", lines: []string{"permessage-deflate; client_max_window_bits"}, want: deflateAccepted},
	{name: "client_max_window_bits=8", lines: []string{"permessage-deflate; client_max_window_bits=8"}, want: deflateAccepted},
	{name: "client_max_window_bits=10", lines: []string{"permessage-deflate; client_max_window_bits=10"}, want: deflateAccepted},
	{name: "client_max_window_bits=15", lines: []string{"permessage-deflate; client_max_window_bits=15"}, want: deflateAccepted},
	{name: "server_max_window_bits=15", lines: []string{"permessage-deflate; server_max_window_bits=15"}, want: deflateAcceptedWindow},
	{
		name:  "all four",
		lines: []string{"permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=15; client_max_window_bits=9"},
		want:  deflateAcceptedWindow,
	},
	{name: "quoted values", lines: []string{`permessage-deflate; server_max_window_bits="15"; client_max_window_bits="12"`}, want: deflateAcceptedWindow},
	{name: "quoted value with an escape", lines: []string{`permessage-deflate; server_max_window_bits="1\5"`}, want: deflateAcceptedWindow},
	{name: "spaces and tabs around separators", lines: []string{"permessage-deflate ;\tclient_max_window_bits = 10 ; server_no_context_takeover"}, want: deflateAccepted},
	{name: "empty list elements", lines: []string{" , permessage-deflate, ,"}, want: deflateAccepted},

	// Values Gyre cannot honour.
	{name: "server_max_window_bits=8", lines: []string{"permessage-deflate; server_max_window_bits=8"}},
	{name: "server_max_window_bits=9", lines: []string{"permessage-deflate; server_max_window_bits=9"}},
	{name: "server_max_window_bits=10", lines: []string{"permessage-deflate; server_max_window_bits=10"}},
	{name: "server_max_window_bits=11", lines: []string{"permessage-deflate; server_max_window_bits=11"}},
	{name: "server_max_window_bits=12", lines: []string{"permessage-deflate; server_max_window_bits=12"}},
	{name: "server_max_window_bits=13", lines: []string{"permessage-deflate; server_max_window_bits=13"}},
	{name: "server_max_window_bits=14", lines: []string{"permessage-deflate; server_max_window_bits=14"}},

	// Invalid offers, declined as RFC 7692 (section 5) asks.
	{name: "server_max_window_bits=16", lines: []string{"permessage-deflate; server_max_window_bits=16"}},
	{name: "server_max_window_bits=7", lines: []string{"permessage-deflate; server_max_window_bits=7"}},
	{name: "server_max_window_bits=abc", lines: []string{"permessage-deflate; server_max_window_bits=abc"}},
	{name: "server_max_window_bits without value", lines: []string{"permessage-deflate; server_max_window_bits"}},
	{name: "server_max_window_bits empty quoted", lines: []string{`permessage-deflate; server_max_window_bits=""`}},
	{name: "server_max_window_bits=015", lines: []string{"permessage-deflate; server_max_window_bits=015"}},
	{name: "server_max_window_bits=+15", lines: []string{"permessage-deflate; server_max_window_bits=+15"}},
	{name: "server_max_window_bits quoted not a token", lines: []string{`permessage-deflate; server_max_window_bits="1 5"`}},
	{name: "client_max_window_bits=16", lines: []string{"permessage-deflate; client_max_window_bits=16"}},
	{name: "client_max_window_bits=7", lines: []string{"permessage-deflate; client_max_window_bits=7"}},
	{name: "client_max_window_bits=09", lines: []string{"permessage-deflate; client_max_window_bits=09"}},
	{name: "client_max_window_bits=+9", lines: []string{"permessage-deflate; client_max_window_bits=+9"}},
	{name: "client_max_window_bits empty quoted", lines: []string{`permessage-deflate; client_max_window_bits=""`}},
	{name: "value on server_no_context_takeover", lines: []string{"permessage-deflate; server_no_context_takeover=1"}},
	{name: "value on client_no_context_takeover", lines: []string{`permessage-deflate; client_no_context_takeover=""`}},
	{name: "duplicate server_no_context_takeover", lines: []string{"permessage-deflate; server_no_context_takeover; server_no_context_takeover"}},
	{name: "duplicate client_max_window_bits", lines: []string{"permessage-deflate; client_max_window_bits; client_max_window_bits=10"}},
	{name: "duplicate server_max_window_bits", lines: []string{"permessage-deflate; server_max_window_bits=15; server_max_window_bits=15"}},
	{name: "unknown parameter", lines: []string{"permessage-deflate; mux"}},
	{name: "unknown parameter with value", lines: []string{"permessage-deflate; client_no_context_takeover; level=9"}},
	{name: "parameter names are exact", lines: []string{"permessage-deflate; Server_No_Context_Takeover"}},
	{name: "extension names are exact", lines: []string{"Permessage-Deflate"}},

	// Other extensions.
	{name: "x-webkit-deflate-frame alone", lines: []string{"x-webkit-deflate-frame"}},
	{name: "x-webkit-deflate-frame before", lines: []string{"x-webkit-deflate-frame; no_context_takeover, permessage-deflate; client_max_window_bits"}, want: deflateAccepted},
	{name: "other extensions only", lines: []string{"permessage-bzip2, deflate-frame; max_window_bits=10"}},
	{name: "empty", lines: []string{""}},

	// Several offers: the first acceptable one is answered.
	{name: "declined offer falls through", lines: []string{"permessage-deflate; server_max_window_bits=10, permessage-deflate"}, want: deflateAccepted},
	{name: "declined offer falls through to a window", lines: []string{"permessage-deflate; server_max_window_bits=10, permessage-deflate; server_max_window_bits=15"}, want: deflateAcceptedWindow},
	{name: "first acceptable wins", lines: []string{"permessage-deflate; client_max_window_bits, permessage-deflate; server_max_window_bits=15"}, want: deflateAccepted},
	{name: "first acceptable wins, window", lines: []string{"permessage-deflate; server_max_window_bits=15, permessage-deflate"}, want: deflateAcceptedWindow},
	{name: "every offer declined", lines: []string{"permessage-deflate; server_max_window_bits=9, permessage-deflate; foo"}},
	{name: "lines: declined then acceptable", lines: []string{"permessage-deflate; server_max_window_bits=12", "permessage-deflate; client_max_window_bits"}, want: deflateAccepted},
	{name: "lines: first acceptable wins", lines: []string{"permessage-deflate; server_max_window_bits=15", "permessage-deflate"}, want: deflateAcceptedWindow},
	{name: "lines: other extension first", lines: []string{"x-webkit-deflate-frame", offerGorilla}, want: deflateAccepted},
	{name: "lines: empty first", lines: []string{"", offerBrowser}, want: deflateAccepted},

	// Headers that do not parse: no compression, whatever they offer.
	{name: "no closing quote", lines: []string{`permessage-deflate; client_max_window_bits="15`}, malformed: true},
	{name: "empty value", lines: []string{"permessage-deflate; client_max_window_bits="}, malformed: true},
	{name: "empty parameter", lines: []string{"permessage-deflate;; client_max_window_bits"}, malformed: true},
	{name: "trailing semicolon", lines: []string{"permessage-deflate;"}, malformed: true},
	{name: "two tokens", lines: []string{"permessage-deflate client_max_window_bits"}, malformed: true},
	{name: "two values", lines: []string{"permessage-deflate; client_max_window_bits=10=11"}, malformed: true},
	{name: "not a token", lines: []string{"permessage-deflate; (comment)"}, malformed: true},
	{name: "bad escape at the end", lines: []string{`permessage-deflate; client_max_window_bits="1\`}, malformed: true},
	{name: "control character in a quoted value", lines: []string{"permessage-deflate; client_max_window_bits=\"1\x01\""}, malformed: true, headOnly: true},
	{name: "acceptable offer, then garbage", lines: []string{"permessage-deflate, @"}, malformed: true},
	{name: "lines: acceptable, then garbage", lines: []string{offerBrowser, "permessage-deflate; ="}, malformed: true},
	{name: "lines: garbage, then acceptable", lines: []string{"=", offerBrowser}, malformed: true},
}

// TestNegotiate checks the reading of offers on its own, as both upgrades
// use it: net/http's lines as strings, gobwas/ws's line by line as bytes.
func TestNegotiate(t *testing.T) {
	for _, tt := range negotiationCases {
		t.Run(tt.name, func(t *testing.T) {
			if got := negotiate(tt.lines); got != tt.want {
				t.Errorf("negotiate: %v, want %v", got, tt.want)
			}
			var n negotiation
			malformed := false
			for _, l := range tt.lines {
				a, ok := scanOffers([]byte(l))
				if sa, sok := scanOffers(l); sa != a || sok != ok {
					t.Errorf("line %q: scanned as bytes %v %v, as a string %v %v", l, a, ok, sa, sok)
				}
				malformed = malformed || !ok
				n.add(a, ok)
			}
			if got := n.result(); got != tt.want {
				t.Errorf("line by line: %v, want %v", got, tt.want)
			}
			if malformed != tt.malformed {
				t.Errorf("malformed %v, want %v", malformed, tt.malformed)
			}
		})
	}
}

// TestUpgradeNegotiatesCompression runs every case through a real
// handshake on both upgrades, and checks that the connection then does
// what the answer says, both ways: frames from the server are compressed
// only when it was accepted, and a compressed client message is read.
func TestUpgradeNegotiatesCompression(t *testing.T) {
	payload := []byte(strings.Repeat(`{"channel":"news","data":{"n":1}}`, 20))
	for _, up := range upgraders {
		t.Run(up.name, func(t *testing.T) {
			z := &Compression{Level: 1, MinSize: 64}
			s := up.newServer(t, Options{Compression: z})
			for _, tt := range negotiationCases {
				t.Run(tt.name, func(t *testing.T) {
					if tt.headOnly && up.name == "Upgrade" {
						t.Skip("net/http refuses the header line")
					}
					var extra strings.Builder
					for _, l := range tt.lines {
						extra.WriteString("Sec-WebSocket-Extensions: " + l + "\r\n")
					}
					nc, resp, br := rawDial(t, s, "/connection/websocket", extra.String())
					if resp.StatusCode != http.StatusSwitchingProtocols {
						t.Fatalf("status %d, want 101", resp.StatusCode)
					}
					u := s.accept(t)
					if u.err != nil {
						t.Fatalf("%s: %v", u.via, u.err)
					}
					defer u.conn.Close(1000, "")
					got := resp.Header.Values("Sec-WebSocket-Extensions")
					if want := extensionAnswers[tt.want]; want == "" && len(got) != 0 || want != "" && (len(got) != 1 || got[0] != want) {
						t.Fatalf("answer's Sec-WebSocket-Extensions %q, want %q", got, want)
					}
					accepted := tt.want != deflateDeclined
					if (u.conn.Compression() == z) != accepted || (u.conn.Compression() == nil) == accepted {
						t.Fatalf("Compression() = %p, want it set %v", u.conn.Compression(), accepted)
					}
					cl := &client{t: t, conn: nc, r: br}
					checkCompressedBothWays(t, cl, u.conn, payload, accepted)
				})
			}
		})
	}
}

// checkCompressedBothWays sends payload from the server and from the
// client, compressed where compressed says.
func checkCompressedBothWays(t *testing.T, cl *client, c *Conn, payload []byte, compressed bool) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.WriteFrame(payload) }()
	f := cl.recv()
	if err := <-done; err != nil {
		t.Fatalf("WriteFrame: %v", err)
	}
	got := f.Payload
	if rsv1 := f.Header.Rsv1(); rsv1 != compressed {
		t.Fatalf("server frame RSV1 %v, want %v", rsv1, compressed)
	}
	if compressed {
		var err error
		if got, err = stdInflate(f.Payload); err != nil {
			t.Fatalf("server frame does not inflate: %v", err)
		}
	}
	if !bytes.Equal(got, payload) {
		t.Fatalf("server frame carries %q, want %q", abbrev(got), abbrev(payload))
	}
	if !compressed {
		return
	}
	cl.send(ws.OpText, true, nil) // an empty plain message between
	b0 := byte(0x80 | 0x40 | byte(ws.OpText))
	cl.sendRaw(wstest.MaskedFrame(b0, stdDeflate(t, payload, 6)))
	if got, _ := mustRead(t, c); len(got) != 0 {
		t.Fatalf("read %q, want the empty message", abbrev(got))
	}
	if got, _ := mustRead(t, c); !bytes.Equal(got, payload) {
		t.Fatalf("read %q, want %q", abbrev(got), abbrev(payload))
	}
}

// TestUpgradeCompressionOff checks that without Options.Compression no
// offer is answered and the connection sends plain frames.
func TestUpgradeCompressionOff(t *testing.T) {
	offers := []string{offerBrowser, offerPythonWindow, offerGorilla, offerCoderContext, "x-webkit-deflate-frame, permessage-deflate"}
	payload := []byte(strings.Repeat("compressible ", 100))
	for _, up := range upgraders {
		t.Run(up.name, func(t *testing.T) {
			s := up.newServer(t, Options{})
			for _, offer := range offers {
				t.Run(offer, func(t *testing.T) {
					cl, c, got := s.connectDeflate(t, offer)
					if len(got) != 0 {
						t.Errorf("answer's Sec-WebSocket-Extensions %q, want none", got)
					}
					if c.Compression() != nil {
						t.Error("Compression() is set")
					}
					checkCompressedBothWays(t, cl, c, payload, false)
				})
			}
		})
	}
}

// TestUpgradeCompressionAnswerHeaders checks the answer's headers when
// compression is accepted beside a subprotocol and Options.Header.
func TestUpgradeCompressionAnswerHeaders(t *testing.T) {
	for _, up := range upgraders {
		for _, withHeader := range []bool{false, true} {
			for _, sub := range []string{"", SubprotocolJSON, SubprotocolProtobuf} {
				for _, offer := range []string{offerGorilla, offerPythonWindow} {
					name := up.name + "/header=" + map[bool]string{false: "no", true: "yes"}[withHeader] + "/" + sub + "/" + offer
					t.Run(name, func(t *testing.T) {
						var extra http.Header
						if withHeader {
							extra = http.Header{"Set-Cookie": {"a=1"}}
						}
						s := up.newServer(t, Options{Compression: &Compression{Level: 1}, Header: extra})
						lines := "Sec-WebSocket-Extensions: " + offer + "\r\n"
						if sub != "" {
							lines += "Sec-WebSocket-Protocol: " + sub + "\r\n"
						}
						resp, _ := headHandshake(t, s, "/connection/websocket", lines)
						if resp.StatusCode != http.StatusSwitchingProtocols {
							t.Fatalf("status %d, want 101", resp.StatusCode)
						}
						want := extensionAnswers[deflateAccepted]
						if offer == offerPythonWindow {
							want = extensionAnswers[deflateAcceptedWindow]
						}
						if got := resp.Header.Values("Sec-WebSocket-Extensions"); len(got) != 1 || got[0] != want {
							t.Errorf("Sec-WebSocket-Extensions %q, want %q", got, want)
						}
						if got := resp.Header.Values("Sec-WebSocket-Protocol"); sub == "" && len(got) != 0 || sub != "" && (len(got) != 1 || got[0] != sub) {
							t.Errorf("Sec-WebSocket-Protocol %q, want %q", got, sub)
						}
						if got := resp.Header.Values("Set-Cookie"); withHeader != (len(got) == 1 && got[0] == "a=1") {
							t.Errorf("Set-Cookie %q", got)
						}
						u := s.accept(t)
						if u.err != nil {
							t.Fatal(u.err)
						}
						_ = u.conn.Close(1000, "")
						if u.conn.Compression() == nil {
							t.Error("Compression() is nil")
						}
						if withHeader && len(extra) != 1 {
							t.Errorf("Options.Header changed: %v", extra)
						}
					})
				}
			}
		}
	}
}

// TestNegotiateAllocations keeps the reading of real clients' offers free
// of allocations: it runs on every handshake when compression is on.
func TestNegotiateAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	for _, offer := range []string{offerBrowser, offerPythonWindow, offerGorilla, offerCoderContext, "x-webkit-deflate-frame, " + offerBrowser} {
		lines := []string{offer}
		line := []byte(offer)
		allocs := testing.AllocsPerRun(100, func() {
			if negotiate(lines) == deflateDeclined {
				t.Fatal("declined")
			}
			var n negotiation
			n.add(scanOffers(line))
			if n.result() == deflateDeclined {
				t.Fatal("declined")
			}
		})
		if allocs != 0 {
			t.Errorf("%q: %v allocations, want 0", offer, allocs)
		}
	}
}
