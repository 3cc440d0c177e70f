package sdk

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/centrifugal/centrifuge-go"

	"github.com/gyrehq/gyre/tests/sdk/go/internal/gyretest"
)

// compressionMinSize is compression_min_size in the tests: the replies to
// connect and subscribe and the small publications are shorter, so they
// must go plain.
const compressionMinSize = 512

// deflateExtension is what gyre answers to any acceptable offer.
const deflateExtension = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"

func compressionConfig() map[string]any {
	cfg := config()
	cfg["websocket"] = map[string]any{"compression": true, "compression_min_size": compressionMinSize}
	return cfg
}

// nodes are where a compression test connects its clients (sub) and
// publishes (pub): one server on the memory engine; on Redis two nodes, so
// that publications reach the subscribers' node only through Redis.
type nodes struct{ sub, pub *gyretest.Server }

func startNodes(t *testing.T, engine string) nodes {
	t.Helper()
	if engine == "memory" {
		s := startNode(t, compressionConfig)
		return nodes{sub: s, pub: s}
	}
	r := startRedis(t)
	node := func(name string) *gyretest.Server {
		return startNode(t, func() map[string]any { return onRedis(compressionConfig(), name, r.Addr) })
	}
	return nodes{sub: node("node-sub"), pub: node("node-pub")}
}

// compressiblePublications is what a test publishes, in order: about 1 KB
// of JSON with the repetition of real application data (records of one
// shape), and between them small ones under compressionMinSize. Each has a
// marker of its own, so that the tap finds the message that carried it.
func compressiblePublications() []map[string]any {
	tag := channel("")
	var out []map[string]any
	for k := range 8 {
		if k%3 == 1 {
			out = append(out, map[string]any{"marker": fmt.Sprintf("small-%s-%d", tag, k), "seq": k})
			continue
		}
		var rows []map[string]any
		for r := range 10 {
			status := "ok"
			if (r+k)%4 == 0 {
				status = "warning"
			}
			rows = append(rows, map[string]any{
				"sensor":  fmt.Sprintf("sensor-%d", r),
				"status":  status,
				"unit":    "celsius",
				"value":   18 + (k*7+r)%11,
				"updated": fmt.Sprintf("2026-11-28T10:%02d:0%dZ", k, r%10),
			})
		}
		out = append(out, map[string]any{"marker": fmt.Sprintf("big-%s-%d", tag, k), "seq": k, "kind": "readings", "rows": rows})
	}
	return out
}

// checkWire checks what the tap saw on a connection that received sent:
// the extension negotiated or not, every message whole and those under
// compressionMinSize plain, each large publication compressed to at most a
// third of its size. It returns what the large publications took on the
// wire and inflated.
func checkWire(t *testing.T, what string, conn *tappedConn, sent []map[string]any, deflate bool) (wire, plain int) {
	t.Helper()
	status, ext, msgs, compressedControl := conn.snapshot()
	want := ""
	if deflate {
		want = deflateExtension
	}
	if status != "101" || ext != want {
		t.Fatalf("%s: handshake answered %s with extensions %q, want 101 with %q", what, status, ext, want)
	}
	if compressedControl != 0 {
		t.Errorf("%s: %d control frames with RSV1", what, compressedControl)
	}
	var shown strings.Builder
	for _, m := range msgs {
		kind := "plain"
		if m.compressed {
			kind = "deflate"
		}
		fmt.Fprintf(&shown, "\n    %s %dB on the wire, %dB", kind, m.wireBytes, len(m.data))
	}
	for _, m := range msgs {
		if m.err != nil {
			t.Fatalf("%s: a message did not inflate on its own: %v", what, m.err)
		}
		if m.compressed && (len(m.data) < compressionMinSize || !deflate) {
			t.Fatalf("%s: a message of %d bytes was compressed; messages:%s", what, len(m.data), shown.String())
		}
	}
	for _, p := range sent {
		marker := p["marker"].(string)
		var carrying []wireMessage
		for _, m := range msgs {
			if bytes.Contains(m.data, []byte(`"`+marker+`"`)) {
				carrying = append(carrying, m)
			}
		}
		if len(carrying) != 1 {
			t.Fatalf("%s: %s is in %d messages:%s", what, marker, len(carrying), shown.String())
		}
		m := carrying[0]
		if !deflate || !strings.HasPrefix(marker, "big-") {
			continue
		}
		if !m.compressed {
			t.Errorf("%s: %s (%d bytes) went uncompressed", what, marker, len(m.data))
		} else if m.wireBytes*3 > len(m.data) {
			t.Errorf("%s: %s took %d bytes on the wire for %d, more than a third", what, marker, m.wireBytes, len(m.data))
		}
		wire += m.wireBytes
		plain += len(m.data)
	}
	return wire, plain
}

// TestCompressedFanOut has a client with EnableCompression and one without
// subscribed to one channel; both must receive every publication in order
// and intact, the first with the large ones compressed on the wire.
func TestCompressedFanOut(t *testing.T) {
	for _, engine := range []string{"memory", "redis"} {
		t.Run(engine, func(t *testing.T) {
			n := startNodes(t, engine)
			eachCodec(t, func(t *testing.T, cd codec) {
				ch := channel("chat:deflate-")
				type subscriber struct {
					what    string
					deflate bool
					tap     *wireTap
					s       *sub
				}
				var subs []subscriber
				for _, deflate := range []bool{true, false} {
					tap := &wireTap{}
					c := newClient(t, cd, clientOptions{url: n.sub.WSURL, dial: tap.dial, compression: deflate})
					c.connect(t)
					s := newSub(t, c, ch, centrifuge.SubscriptionConfig{})
					s.subscribe(t)
					subs = append(subs, subscriber{fmt.Sprintf("compression %v", deflate), deflate, tap, s})
				}

				sent := compressiblePublications()
				for i, data := range sent {
					pos, err := n.pub.Publish(ch, data)
					if err != nil {
						t.Fatalf("publish into %s: %v", ch, err)
					}
					if pos.Offset != uint64(i+1) {
						t.Fatalf("publication %d got offset %d", i+1, pos.Offset)
					}
				}
				for _, sb := range subs {
					pubs := sb.s.pubs.waitN(t, 0, len(sent))
					for i, p := range pubs {
						if p.Offset != uint64(i+1) {
							t.Fatalf("%s: publication %d arrived with offset %d:%s", sb.what, i+1, p.Offset, show(pubs))
						}
						sameJSON(t, fmt.Sprintf("%s: publication %d", sb.what, i+1), p.Data, sent[i])
					}
					conns := sb.tap.connections()
					if len(conns) != 1 {
						t.Fatalf("%s: %d connections, want 1 (no reconnect)", sb.what, len(conns))
					}
					wire, plain := checkWire(t, sb.what, conns[0], sent, sb.deflate)
					if wire*3 > plain {
						t.Errorf("%s: large publications took %d bytes on the wire for %d", sb.what, wire, plain)
					}
					if sb.deflate {
						commandsCompressed(t, sb.what, conns[0])
					}
				}
			})
		})
	}
}

// commandsCompressed checks that the client's connect and subscribe
// commands went compressed (gorilla/websocket, under centrifuge-go,
// compresses every message it writes once the extension is on), each
// inflating on its own: the server read them so.
func commandsCompressed(t *testing.T, what string, conn *tappedConn) {
	t.Helper()
	_, _, cmds, _ := conn.fromClient.snapshot()
	if len(cmds) < 2 {
		t.Fatalf("%s: %d commands on the wire, want connect and subscribe", what, len(cmds))
	}
	for i, m := range cmds[:2] {
		if !m.compressed || m.err != nil {
			t.Errorf("%s: command %d compressed %v, inflated with error %v", what, i+1, m.compressed, m.err)
		}
	}
}
