package server

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
	"github.com/gyrehq/gyre/sharedpoll"
)

// e2eValues is a backend's versioned values, served to both proxies.
type e2eValues struct {
	mu     sync.Mutex
	values map[string]uint64
	broken bool
}

func (v *e2eValues) bump(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.values[key]++
}

func (v *e2eValues) setBroken(b bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.broken = b
}

type e2eGRPC struct {
	proxypb.UnimplementedCentrifugoProxyServer
	v *e2eValues
}

func (g *e2eGRPC) SharedPollRefresh(_ context.Context, req *proxypb.SharedPollRefreshRequest) (*proxypb.SharedPollRefreshResponse, error) {
	g.v.mu.Lock()
	defer g.v.mu.Unlock()
	res := &proxypb.SharedPollRefreshResult{}
	for _, it := range req.Items {
		if ver, ok := g.v.values[it.Key]; ok {
			res.Items = append(res.Items, &proxypb.SharedPollRefreshResultItem{Key: it.Key, Data: []byte(`{"grpc":` + jsonNumber(ver) + `}`), Version: ver})
		}
	}
	return &proxypb.SharedPollRefreshResponse{Result: res}, nil
}

func jsonNumber(v uint64) string { b, _ := json.Marshal(v); return string(b) }

// TestSharedPollThroughServer: a client of the server subscribes to
// shared-poll channels, tracks keys with a backend's signature, and gets
// the values its refresh proxies answer, over HTTP (the default proxy)
// and gRPC (a named one); a backend answering garbage changes nothing
// the client has, and its values come once it answers again.
func TestSharedPollThroughServer(t *testing.T) {
	v := &e2eValues{values: map[string]uint64{"AAPL": 1, "NVDA": 1}}
	httpBackend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Channel string `json:"channel"`
			Items   []struct {
				Key     string `json:"key"`
				Version uint64 `json:"version"`
			} `json:"items"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("refresh request %q: %v", body, err)
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.broken {
			_, _ = io.WriteString(w, `{"result":{"items":[{"data":`)
			return
		}
		var items []string
		for _, it := range req.Items {
			if ver, ok := v.values[it.Key]; ok && ver > it.Version {
				items = append(items, `{"key":"`+it.Key+`","data":{"http":`+jsonNumber(ver)+`},"version":`+jsonNumber(ver)+`}`)
			}
		}
		_, _ = io.WriteString(w, `{"result":{"items":[`+strings.Join(items, ",")+`]}}`)
	}))
	t.Cleanup(httpBackend.Close)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	proxypb.RegisterCentrifugoProxyServer(g, &e2eGRPC{v: v})
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)

	c := testConfig()
	c.SharedPoll = config.SharedPoll{HMACSecretKey: "poll-secret"}
	c.Channel.Proxy.SharedPollRefresh = config.Proxy{Endpoint: httpBackend.URL + "/refresh", Timeout: time.Second}
	c.Proxies = []config.NamedProxy{{Name: "feed", Proxy: config.Proxy{Endpoint: "grpc://" + lis.Addr().String(), Timeout: time.Second}}}
	ns := func(name, proxyName string) config.Namespace {
		return config.Namespace{Name: name, ChannelOptions: config.ChannelOptions{
			SubscriptionType: "shared_poll", AllowSubscribeForClient: true,
			SharedPoll: config.SharedPollOptions{ProxyName: proxyName, Mode: "versioned", RefreshInterval: 50 * time.Millisecond},
		}}
	}
	c.Channel.Namespaces = []config.Namespace{ns("prices", ""), ns("feed", "feed")}
	_, base := newServer(t, c)
	url := "ws" + strings.TrimPrefix(base, "http") + "/connection/websocket"

	for _, proto := range []protocol.Type{protocol.TypeJSON, protocol.TypeProtobuf} {
		cl := wstest.Dial(t, url, proto)
		if rep := cl.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: signToken(t, testSecret, "alice")}}); rep.Error != nil {
			t.Fatalf("connect: %v", rep.Error)
		}
		// Values come in the track reply when the node has them (a
		// client before this one tracked the keys), else in pushes.
		inReply := map[string][]*protocol.Publication{}
		for _, ch := range []string{"prices:us", "feed:us"} {
			if rep := cl.Subscribe(&protocol.SubscribeRequest{Channel: ch, Type: 4}); rep.Error != nil {
				t.Fatalf("subscribe %s: %v", ch, rep.Error)
			}
			now := time.Now()
			keys := []string{"AAPL", "NVDA"}
			sig := sharedpoll.Sign("poll-secret", now.Unix(), now.Add(time.Hour).Unix(), "alice", ch, keys)
			req := &protocol.SubRefreshRequest{Channel: ch, Type: 1, Track: []*protocol.TrackBatch{{Signature: sig, Items: []*protocol.KeyedItem{{Key: "AAPL"}, {Key: "NVDA"}}}}}
			rep := cl.Call(&protocol.Command{SubRefresh: req})
			if rep.Error != nil || !rep.SubRefresh.Expires {
				t.Fatalf("track in %s: %v", ch, rep)
			}
			inReply[ch] = rep.SubRefresh.Items
			// Signed for another user: refused.
			forged := sharedpoll.Sign("poll-secret", now.Unix(), now.Add(time.Hour).Unix(), "bob", ch, keys)
			req.Track[0].Signature = forged
			if rep := cl.Call(&protocol.Command{SubRefresh: req}); rep.Error == nil || rep.Error.Code != 103 {
				t.Fatalf("track with another user's signature in %s: %v, want 103", ch, rep)
			}
		}
		wantData := map[string]string{"prices:us": `{"http":`, "feed:us": `{"grpc":`}
		waitVersion := func(ch, key string, version uint64) {
			t.Helper()
			cl.WaitFor(ch+" "+key+" at version "+jsonNumber(version), func() bool {
				for _, p := range append(cl.Pubs(ch), inReply[ch]...) {
					if p.Key == key && p.Version == version {
						if !strings.HasPrefix(string(p.Data), wantData[ch]) {
							t.Fatalf("%s %s: data %s, want %s...", ch, key, p.Data, wantData[ch])
						}
						return true
					}
				}
				return false
			})
		}
		for ch := range wantData {
			waitVersion(ch, "AAPL", v.values["AAPL"])
			waitVersion(ch, "NVDA", v.values["NVDA"])
		}
		v.setBroken(true)
		v.bump("AAPL")
		time.Sleep(200 * time.Millisecond) // polls of a broken backend
		v.setBroken(false)
		v.mu.Lock()
		want := v.values["AAPL"]
		v.mu.Unlock()
		for ch := range wantData {
			waitVersion(ch, "AAPL", want)
		}
		cl.Close()
	}
}
