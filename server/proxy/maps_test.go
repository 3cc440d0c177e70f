package proxy_test

import (
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/config"
)

// mapProxyConfig is a configuration of map namespaces with a connect
// proxy at b (every client is user 56):
//   - board: writes and removals decided by the default map proxies (b);
//   - named: writes decided by the named proxy "maps" (b2);
//   - open: no proxy, clients may write and remove;
//   - mine: no proxy, clients may write, under their user id;
//   - closed: no proxy, no permission.
func mapProxyConfig(kind string, b, b2 *backend) *config.Config {
	c := config.Default()
	p := func(b *backend, hook string) config.Proxy {
		return config.Proxy{Endpoint: b.endpoint(kind, hook), Timeout: 2 * time.Second, IncludeConnectionMeta: true}
	}
	c.Client.Proxy.Connect = config.EnabledProxy{Enabled: true, Proxy: p(b, "connect")}
	c.Channel.Proxy.MapPublish = p(b, "map_publish")
	c.Channel.Proxy.MapRemove = p(b, "map_remove")
	c.Proxies = []config.NamedProxy{{Name: "maps", Proxy: p(b2, "map_publish")}}
	ns := func(name string, m config.MapOptions) config.Namespace {
		m.Mode = "persistent"
		if m.PublishProxyName == "" {
			m.PublishProxyName = "default"
		}
		m.RemoveProxyName = "default"
		return config.Namespace{Name: name, ChannelOptions: config.ChannelOptions{
			SubscriptionType: "map", AllowSubscribeForClient: true, Map: m,
		}}
	}
	c.Channel.Namespaces = []config.Namespace{
		ns("board", config.MapOptions{PublishProxyEnabled: true, RemoveProxyEnabled: true}),
		ns("named", config.MapOptions{PublishProxyEnabled: true, PublishProxyName: "maps"}),
		ns("open", config.MapOptions{AllowPublishForClient: true, AllowRemoveForClient: true}),
		ns("mine", config.MapOptions{AllowPublishForClient: true, ClientKey: "user_id"}),
		ns("closed", config.MapOptions{}),
	}
	return c
}

// mapSubscribe subscribes c to a map channel (its state, then live).
func mapSubscribe(t *testing.T, c *wstest.Client, channel string) {
	t.Helper()
	r := c.Subscribe(&protocol.SubscribeRequest{Channel: channel, Type: 1, Phase: 2})
	if r.Error != nil {
		t.Fatalf("map subscribe %s: %d %s", channel, r.Error.Code, r.Error.Message)
	}
	if r.Subscribe.Phase != 0 {
		t.Fatalf("map subscribe %s: phase %d, want live at once", channel, r.Subscribe.Phase)
	}
}

// mapWrite sends a client's write (or removal) of key and returns the
// reply's error code (0 for success).
func mapWrite(c *wstest.Client, channel, key, data string, removed bool) uint32 {
	r := c.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: channel, Type: 1, Key: key, Data: []byte(data), Removed: removed}})
	if r.Error != nil {
		return r.Error.Code
	}
	return 0
}

// TestMapProxies: clients' writes into and removals from map channels go
// to the map publish and remove proxies of their namespace, over HTTP and
// gRPC; the backend rewrites or refuses them; namespaces without a proxy
// keep their map.allow_* keys and client_key.
func TestMapProxies(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b, b2 := newBackend(t), newBackend(t)
			b.setBody("connect", `{"result":{"user":"56","meta":{"plan":"pro"}}}`)
			b.setBody("map_publish", `{"result":{"key":"k2","data":{"v":"rewritten"},"tags":{"by":"backend"},"score":5}}`)
			b.setBody("map_remove", `{}`)
			b2.setBody("map_publish", `{"result":{}}`)
			g := startGyre(t, mapProxyConfig(kind, b, b2))
			writer, res := connect(t, g)
			reader, _ := connect(t, g)
			for _, ch := range []string{"board:1", "named:1", "open:1", "mine:1"} {
				mapSubscribe(t, reader, ch)
			}

			// A write: the backend sees it and rewrites key, value,
			// tags and score; subscribers get what it wrote.
			if code := mapWrite(writer, "board:1", "k", `{"v":1}`, false); code != 0 {
				t.Fatalf("map write: code %d", code)
			}
			wc := b.waitCalls("map_publish", 1)[0]
			for name, want := range map[string]string{
				"client": `"` + res.Client + `"`, "user": `"56"`, "channel": `"board:1"`, "key": `"k"`,
				"data": `{"v":1}`, "meta": `{"plan":"pro"}`, "encoding": `"json"`,
			} {
				if got := field(wc, name); got != want {
					t.Errorf("map_publish request %s = %s, want %s", name, got, want)
				}
			}
			pub := reader.WaitPubs("board:1", 1)[0]
			jsonEq(t, "written data", pub.Data, `{"v":"rewritten"}`)
			if pub.Key != "k2" || pub.Tags["by"] != "backend" || pub.Score != 5 || pub.Info == nil || pub.Info.User != "56" {
				t.Errorf("written change %+v, want key k2 with the backend's tags and score, by user 56", pub)
			}

			// A removal the backend lets through as it is.
			if code := mapWrite(writer, "board:1", "k2", "", true); code != 0 {
				t.Fatalf("map remove: code %d", code)
			}
			if got := field(b.waitCalls("map_remove", 1)[0], "key"); got != `"k2"` {
				t.Errorf("map_remove request key = %s", got)
			}
			if pub := reader.WaitPubs("board:1", 2)[1]; pub.Key != "k2" || !pub.Removed {
				t.Errorf("removal %+v, want k2 removed", pub)
			}

			// The backend's refusal reaches the client; a result the
			// engine cannot use is an internal error.
			b.setBody("map_publish", `{"error":{"code":1001,"message":"not your card"}}`)
			if code := mapWrite(writer, "board:1", "k", `{}`, false); code != 1001 {
				t.Errorf("refused write: code %d, want 1001", code)
			}
			b.setBody("map_publish", `{"result":{"key_mode":"sometimes"}}`)
			if code := mapWrite(writer, "board:1", "k", `{}`, false); code != 100 {
				t.Errorf("write with a bad key_mode from the backend: code %d, want 100", code)
			}
			b.setBody("map_remove", `{"disconnect":{"code":4500,"reason":"bye"}}`)
			r, closed := writer.TryCall(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "board:1", Type: 1, Key: "k", Removed: true}})
			if r != nil || closed == nil || closed.Code != 4500 {
				t.Errorf("removal answered with a disconnect: reply %v, close %v", r, closed)
			}

			// A named proxy serves its namespace; its empty result
			// writes what the client sent.
			writer, _ = connect(t, g)
			if code := mapWrite(writer, "named:1", "n", `{"x":1}`, false); code != 0 {
				t.Fatalf("write through the named proxy: code %d", code)
			}
			if got := field(b2.waitCalls("map_publish", 1)[0], "channel"); got != `"named:1"` {
				t.Errorf("named proxy channel = %s", got)
			}
			if pub := reader.WaitPubs("named:1", 1)[0]; pub.Key != "n" || string(pub.Data) != `{"x":1}` {
				t.Errorf("write through the named proxy %+v", pub)
			}

			// Without a proxy, the namespace's keys decide.
			if code := mapWrite(writer, "open:1", "o", `1`, false); code != 0 {
				t.Errorf("write to open: code %d", code)
			}
			if code := mapWrite(writer, "closed:1", "c", `1`, false); code != 103 {
				t.Errorf("write to closed: code %d, want 103", code)
			}
			if code := mapWrite(writer, "mine:1", "anything", `1`, false); code != 0 {
				t.Errorf("write to mine: code %d", code)
			}
			if pub := reader.WaitPubs("mine:1", 1)[0]; pub.Key != "56" {
				t.Errorf("write under client_key user_id has key %q, want the user's id 56", pub.Key)
			}
			n := len(b.received("map_publish")) + len(b2.received("map_publish"))
			if n != 4 {
				t.Errorf("%d map_publish calls, want 4: namespaces without a proxy call none", n)
			}
		})
	}
}
