package proxy_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/config"
)

// TestBackendRefusals: an error or disconnect in a response reaches the
// client as the backend wrote it.
func TestBackendRefusals(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b, b2 := newBackend(t), newBackend(t)
			defaultAnswers(b)
			g := startGyre(t, proxyConfig(kind, b, b2))

			b.setBody("connect", `{"error":{"code":1000,"message":"custom","temporary":true}}`)
			c := wstest.Dial(t, g.url, protocol.TypeJSON)
			r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{}})
			if r.Error == nil || r.Error.Code != 1000 || r.Error.Message != "custom" || !r.Error.Temporary {
				t.Errorf("connect error = %v, want 1000 custom temporary", r.Error)
			}

			b.setBody("connect", `{"disconnect":{"code":4501,"reason":"unauthorized"}}`)
			c = wstest.Dial(t, g.url, protocol.TypeJSON)
			c.Send(&protocol.Command{Id: 1, Connect: &protocol.ConnectRequest{}})
			if ce := c.WaitClose(); ce.Code != 4501 || ce.Reason != "unauthorized" {
				t.Errorf("connect disconnect = %d %q, want 4501 unauthorized", ce.Code, ce.Reason)
			}

			defaultAnswers(b)
			c, _ = connect(t, g)
			b.setBody("subscribe", `{"error":{"code":403,"message":"forbidden"}}`)
			if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "chat:x"}); r.Error == nil || r.Error.Code != 403 {
				t.Errorf("subscribe error = %v, want 403", r.Error)
			}
			b.setBody("rpc", `{"error":{"code":1404,"message":"no such thing"}}`)
			if r := c.Call(&protocol.Command{Rpc: &protocol.RPCRequest{Method: "m"}}); r.Error == nil || r.Error.Code != 1404 {
				t.Errorf("rpc error = %v, want 1404", r.Error)
			}
			b.setBody("publish", `{"disconnect":{"code":4000,"reason":"go away"}}`)
			c.Send(&protocol.Command{Id: 99, Publish: &protocol.PublishRequest{Channel: "chat:x", Data: []byte(`{}`)}})
			if ce := c.WaitClose(); ce.Code != 4000 {
				t.Errorf("publish disconnect = %d %q, want 4000", ce.Code, ce.Reason)
			}
		})
	}
}

// TestBackendFailures: a backend that is slow, fails or answers garbage
// gives the client 100, and a log line names the proxy and the cause.
func TestBackendFailures(t *testing.T) {
	cases := []struct {
		name string
		a    answer
	}{
		{"timeout", answer{status: http.StatusOK, body: `{"result":{"user":"1"}}`, delay: 5 * time.Second}},
		{"status 500", answer{status: http.StatusInternalServerError, body: `oops`}},
		{"malformed body", ok(`{"result":`)},
		{"wrong type", ok(`{"result":{"user":12}}`)},
	}
	for _, kind := range kinds {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				b, b2 := newBackend(t), newBackend(t)
				defaultAnswers(b)
				c := proxyConfig(kind, b, b2)
				c.Client.Proxy.Connect.Timeout = 300 * time.Millisecond
				g := startGyre(t, c)
				b.set("connect", func(map[string]any) answer { return tc.a })

				cl := wstest.Dial(t, g.url, protocol.TypeJSON)
				start := time.Now()
				r := cl.Call(&protocol.Command{Connect: &protocol.ConnectRequest{}})
				if r.Error == nil || r.Error.Code != 100 || !r.Error.Temporary {
					t.Fatalf("connect = %v, want error 100 temporary", r.Error)
				}
				if tc.a.delay > 0 && time.Since(start) >= tc.a.delay {
					t.Errorf("connect waited for the slow backend")
				}
				logs := g.log.Find(slog.LevelError, "proxy: call failed", map[string]string{"proxy": "client.proxy.connect", "call": "Connect"})
				if len(logs) == 0 || logs[0].Attr("error") == "" {
					t.Errorf("no error log naming the proxy and cause: %v", logs)
				}
				// The connection stays usable for a retry.
				defaultAnswers(b)
				if r := cl.Call(&protocol.Command{Connect: &protocol.ConnectRequest{}}); r.Error != nil {
					t.Errorf("connect after the backend recovered: %v", r.Error)
				}
			})
		}
	}
}

// TestStatusTransforms: configured HTTP statuses become the client's
// error or disconnect.
func TestStatusTransforms(t *testing.T) {
	b, b2 := newBackend(t), newBackend(t)
	defaultAnswers(b)
	c := proxyConfig("http", b, b2)
	c.Client.Proxy.Connect.HTTP.StatusToCodeTransforms = []config.StatusToCodeTransform{
		{StatusCode: 403, ToError: config.TransformError{Code: 403, Message: "forbidden"}},
		{StatusCode: 401, ToDisconnect: config.TransformDisconnect{Code: 4401, Reason: "unauthorized"}},
	}
	g := startGyre(t, c)

	b.set("connect", func(map[string]any) answer { return answer{status: 403} })
	cl := wstest.Dial(t, g.url, protocol.TypeJSON)
	if r := cl.Call(&protocol.Command{Connect: &protocol.ConnectRequest{}}); r.Error == nil || r.Error.Code != 403 || r.Error.Message != "forbidden" {
		t.Errorf("connect after 403 = %v, want error 403 forbidden", r.Error)
	}
	b.set("connect", func(map[string]any) answer { return answer{status: 401} })
	cl = wstest.Dial(t, g.url, protocol.TypeJSON)
	cl.Send(&protocol.Command{Id: 1, Connect: &protocol.ConnectRequest{}})
	if ce := cl.WaitClose(); ce.Code != 4401 {
		t.Errorf("close after 401 = %d %q, want 4401", ce.Code, ce.Reason)
	}
	b.set("connect", func(map[string]any) answer { return answer{status: 502} })
	cl = wstest.Dial(t, g.url, protocol.TypeJSON)
	if r := cl.Call(&protocol.Command{Connect: &protocol.ConnectRequest{}}); r.Error == nil || r.Error.Code != 100 {
		t.Errorf("connect after 502 = %v, want 100", r.Error)
	}
}

// TestServerSideRefresh: an expiring connection or subscription is not
// asked to refresh; the backend decides when it expires.
func TestServerSideRefresh(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b, b2 := newBackend(t), newBackend(t)
			defaultAnswers(b)
			c := proxyConfig(kind, b, b2)
			c.Client.Proxy.Refresh = config.EnabledProxy{Enabled: true, Proxy: config.Proxy{
				Endpoint: b.endpoint(kind, "refresh"), Timeout: 2 * time.Second, IncludeConnectionMeta: true,
			}}
			g := startGyre(t, c)

			soon := time.Now().Add(time.Second).Unix()
			b.setBody("subscribe", fmt.Sprintf(`{"result":{"expire_at":%d}}`, soon))
			b.setBody("sub_refresh", `{"result":{"expired":true}}`)
			cl, _ := connect(t, g)
			sr := cl.Subscribe(&protocol.SubscribeRequest{Channel: "chat:r"})
			if sr.Error != nil {
				t.Fatal(sr.Error)
			}
			if sr.Subscribe.Expires {
				t.Error("subscribe result asks the client to refresh")
			}
			u := cl.WaitPush("unsubscribe", func(p *protocol.Push) bool { return p.Unsubscribe != nil && p.Channel == "chat:r" })
			if u.Unsubscribe.Code != 2501 {
				t.Errorf("unsubscribe code = %d, want 2501", u.Unsubscribe.Code)
			}
			if got := field(b.waitCalls("sub_refresh", 1)[0], "channel"); got != `"chat:r"` {
				t.Errorf("sub_refresh channel = %s", got)
			}

			b.setBody("connect", fmt.Sprintf(`{"result":{"user":"7","expire_at":%d,"meta":{"m":1}}}`, time.Now().Add(time.Second).Unix()))
			b.setBody("refresh", `{"result":{"expired":true}}`)
			cl, res := connect(t, g)
			if res.Expires || res.Ttl != 0 {
				t.Errorf("connect result expires=%v ttl=%d, want no client-side refresh", res.Expires, res.Ttl)
			}
			if ce := cl.WaitClose(); ce.Code != 3005 {
				t.Errorf("close = %d %q, want 3005", ce.Code, ce.Reason)
			}
			rc := b.waitCalls("refresh", 1)[0]
			if field(rc, "user") != `"7"` || field(rc, "meta") != `{"m":1}` {
				t.Errorf("refresh request = %v", rc.body)
			}
		})
	}
}

// TestBinaryPayloads: binary_encoding sends b64data; a protobuf client's
// non-JSON data goes as b64data over HTTP whatever the setting.
func TestBinaryPayloads(t *testing.T) {
	b, b2 := newBackend(t), newBackend(t)
	defaultAnswers(b)
	c := proxyConfig("http", b, b2)
	c.Channel.Proxy.Publish.BinaryEncoding = true
	g := startGyre(t, c)

	cl := wstest.Dial(t, g.url, protocol.TypeProtobuf)
	r := cl.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Data: []byte{0xff, 0x00}}})
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	cc := b.waitCalls("connect", 1)[0]
	if field(cc, "b64data") != `"/wA="` || field(cc, "data") != "" || field(cc, "protocol") != `"protobuf"` {
		t.Errorf("connect request = %v, want b64data /wA=", cc.body)
	}
	b.setBody("publish", `{"result":{"b64data":"AQI="}}`)
	if r := cl.Subscribe(&protocol.SubscribeRequest{Channel: "chat:bin"}); r.Error != nil {
		t.Fatal(r.Error)
	}
	if r := cl.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "chat:bin", Data: []byte(`{"x":1}`)}}); r.Error != nil {
		t.Fatal(r.Error)
	}
	pub := cl.WaitPubs("chat:bin", 1)[0]
	if string(pub.Data) != "\x01\x02" {
		t.Errorf("publication data = %q, want the backend's b64data decoded", pub.Data)
	}
	pc := b.waitCalls("publish", 1)[0]
	if field(pc, "b64data") != `"eyJ4IjoxfQ=="` || field(pc, "encoding") != `"binary"` {
		t.Errorf("publish request = %v, want b64data and encoding binary", pc.body)
	}
}

// TestUnappliedFields: result fields Gyre does not apply (capabilities,
// per-subscription filters and expiry of connect subs) are
// named in a warning instead of being dropped in silence, and the rest of
// the result still works.
func TestUnappliedFields(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b, b2 := newBackend(t), newBackend(t)
			defaultAnswers(b)
			g := startGyre(t, proxyConfig(kind, b, b2))
			b.setBody("connect", `{"result":{"user":"7","caps":[{"channels":["x"],"allow":["sub"]}],
				"subs":{"news:c":{"expire_at":99,"server_tags_filter":{"key":"a","cmp":"eq","val":"b"}}}}}`)
			b.setBody("subscribe", `{"result":{"allow":["pub"]}}`)

			c, res := connect(t, g)
			if res.Subs["news:c"] == nil {
				t.Fatalf("connect subs = %v, want news:c", res.Subs)
			}
			if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "chat:u"}); r.Error != nil {
				t.Fatalf("subscribe: %v", r.Error)
			}
			for call, fields := range map[string][]string{
				"Connect":   {"caps", "subs.news:c.expire_at", "subs.news:c.server_tags_filter"},
				"Subscribe": {"allow"},
			} {
				logs := g.log.Find(slog.LevelWarn, "proxy: result fields Gyre does not apply", map[string]string{"call": call})
				if len(logs) == 0 {
					t.Errorf("%s: no warning about unapplied fields", call)
					continue
				}
				for _, f := range fields {
					if !strings.Contains(logs[0].Attr("fields"), f) {
						t.Errorf("%s: warning fields %q lack %s", call, logs[0].Attr("fields"), f)
					}
				}
			}
		})
	}
}

// TestPublishVersion: the publish proxy's version and version_epoch are
// applied: a publication whose version is not newer than the channel's
// last is dropped (the client's publish still succeeds, as in
// Centrifugo), and the subscribers never see it.
func TestPublishVersion(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b, b2 := newBackend(t), newBackend(t)
			defaultAnswers(b)
			g := startGyre(t, proxyConfig(kind, b, b2))
			versions := []int{2, 1, 2, 3}
			var calls atomic.Int64
			b.set("publish", func(map[string]any) answer {
				v := versions[calls.Add(1)-1]
				return ok(fmt.Sprintf(`{"result":{"version":%d,"version_epoch":"e"}}`, v))
			})
			c, _ := connect(t, g)
			if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "chat:ver"}); r.Error != nil {
				t.Fatalf("subscribe: %v", r.Error)
			}
			for i := range versions {
				data := fmt.Sprintf(`{"i":%d}`, i)
				if r := c.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "chat:ver", Data: []byte(data)}}); r.Error != nil {
					t.Fatalf("publish %d: %v", i, r.Error)
				}
			}
			pubs := c.WaitPubs("chat:ver", 2)
			if len(pubs) != 2 || string(pubs[0].Data) != `{"i":0}` || string(pubs[1].Data) != `{"i":3}` {
				var got []string
				for _, p := range pubs {
					got = append(got, string(p.Data))
				}
				t.Fatalf("delivered %q, want the publications of versions 2 and 3 only", got)
			}
			if logs := g.log.Find(slog.LevelWarn, "proxy: result fields Gyre does not apply", map[string]string{"call": "Publish"}); len(logs) != 0 {
				t.Fatalf("warning about version fields: %v", logs)
			}
		})
	}
}

// TestBackendFailureLogsRateLimited: a backend that fails every call
// does not write a line per call: 1,000 failing connects give a few lines
// per second, which together count every failure, and the engine adds
// none of its own.
func TestBackendFailureLogsRateLimited(t *testing.T) {
	const calls = 1000
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b, b2 := newBackend(t), newBackend(t)
			defaultAnswers(b)
			g := startGyre(t, proxyConfig(kind, b, b2))
			b.set("connect", func(map[string]any) answer { return answer{status: http.StatusInternalServerError} })

			cl := wstest.Dial(t, g.url, protocol.TypeJSON)
			for range calls {
				if r := cl.Call(&protocol.Command{Connect: &protocol.ConnectRequest{}}); r.Error == nil || r.Error.Code != 100 {
					t.Fatalf("connect = %+v, want error 100", r)
				}
			}
			attrs := map[string]string{"proxy": "client.proxy.connect", "call": "Connect"}
			logtest.CheckRateLimited(t, calls, func() []logtest.Record {
				return g.log.Find(slog.LevelError, "proxy: call failed", attrs)
			})
			if l := g.log.Find(slog.LevelError, "command failed", nil); len(l) != 0 {
				t.Errorf("the engine logged the failures again: %d lines", len(l))
			}
		})
	}
}
