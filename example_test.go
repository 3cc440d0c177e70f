package gyre_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
)

// chatChannels is the channel configuration of the examples: a "chat"
// namespace whose channels keep their last 100 publications for an hour
// and track presence.
var chatChannels = gyre.ChannelConfig{
	Namespaces: []gyre.Namespace{{
		Name: "chat",
		ChannelOptions: gyre.ChannelOptions{
			HistorySize: 100,
			HistoryTTL:  time.Hour,
			Presence:    true,
			// Any connected client, even anonymous, may subscribe.
			AllowSubscribeForClient:    true,
			AllowSubscribeForAnonymous: true,
		},
	}},
}

func ExampleNewNode() {
	node, err := gyre.NewNode(gyre.Config{
		Name:     "example",
		Channels: chatChannels,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := node.Run(); err != nil {
		log.Fatal(err)
	}
	defer node.Shutdown(context.Background())

	fmt.Println(node.Name())
	// A channel outside the configured namespaces is refused.
	_, err = node.Publish("news:today", []byte(`{}`))
	fmt.Println(err)
	// Output:
	// example
	// gyre: error 102: unknown channel
}

func ExampleNode_Publish() {
	node := runExampleNode(gyre.Config{Channels: chatChannels})
	defer node.Shutdown(context.Background())

	for _, text := range []string{"hello", "world"} {
		res, err := node.Publish("chat:index", []byte(`{"text":"`+text+`"}`))
		if err != nil {
			log.Fatal(err)
		}
		// Channels with history are streams: each publication gets the
		// next offset.
		fmt.Println("offset", res.Offset)
	}
	// Output:
	// offset 1
	// offset 2
}

func ExampleNode_PublishMany() {
	node := runExampleNode(gyre.Config{Channels: chatChannels})
	defer node.Shutdown(context.Background())

	// A batch: the broker gets the publications together (pipelined on
	// Redis), each subscriber's connection is woken once and gets them in
	// one write, and nothing published elsewhere comes between the
	// publications of one channel.
	items := []gyre.PublishItem{
		{Channel: "chat:index", Data: []byte(`{"n":1}`)},
		{Channel: "chat:index", Data: []byte(`{"n":2}`), Options: gyre.PublishOptions{Tags: map[string]string{"kind": "update"}}},
		{Channel: "chat:other", Data: []byte(`{"n":1}`)},
	}
	node.PublishMany(items)
	for _, it := range items {
		if it.Err != nil {
			log.Fatal(it.Err)
		}
		fmt.Println(it.Channel, "offset", it.Result.Offset)
	}
	// Output:
	// chat:index offset 1
	// chat:index offset 2
	// chat:other offset 1
}

func ExampleNode_History() {
	node := runExampleNode(gyre.Config{Channels: chatChannels})
	defer node.Shutdown(context.Background())

	for _, text := range []string{"one", "two", "three"} {
		if _, err := node.Publish("chat:index", []byte(`{"text":"`+text+`"}`)); err != nil {
			log.Fatal(err)
		}
	}
	// The two latest publications, newest first.
	pubs, top, err := node.History("chat:index", 2, nil, true)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range pubs {
		fmt.Println(p.Offset, string(p.Data))
	}
	fmt.Println("top", top.Offset)

	// What came after offset 2 (a client recovering after a reconnect
	// asks the same).
	pubs, _, err = node.History("chat:index", -1, &gyre.StreamPosition{Offset: 2, Epoch: top.Epoch}, false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(pubs), "since 2:", string(pubs[0].Data))
	// Output:
	// 3 {"text":"three"}
	// 2 {"text":"two"}
	// top 3
	// 1 since 2: {"text":"three"}
}

func ExampleNewWebsocketHandler() {
	node := runExampleNode(gyre.Config{
		// Anonymous connections without a token: fine for a demo.
		AllowAnonymousConnectWithoutToken: true,
		Channels:                          chatChannels,
	})
	defer node.Shutdown(context.Background())

	mux := http.NewServeMux()
	mux.Handle("/connection/websocket", gyre.NewWebsocketHandler(node, gyre.WebsocketConfig{
		AllowedOrigins: []string{"https://chat.example.com"},
	}))
	// A real program calls http.ListenAndServe(":8000", mux).
	srv := httptest.NewServer(mux)
	defer srv.Close()

	c := dialExample(srv.URL + "/connection/websocket")
	defer c.close()
	c.call(`{"id":1,"connect":{"name":"example"}}`)
	fmt.Println(c.call(`{"id":2,"subscribe":{"channel":"chat:index"}}`))
	// Output:
	// {"id":2,"subscribe":{}}
}

func ExampleNode_OnConnecting() {
	node, err := gyre.NewNode(gyre.Config{Channels: chatChannels})
	if err != nil {
		log.Fatal(err)
	}
	// The handler authenticates connections itself, here from the connect
	// data, and subscribes each user to its own channel.
	node.OnConnecting(func(ctx context.Context, e gyre.ConnectingEvent) (gyre.ConnectingReply, error) {
		var data struct{ User string }
		if err := json.Unmarshal(e.Data, &data); err != nil || data.User == "" {
			return gyre.ConnectingReply{}, gyre.DisconnectInvalidToken
		}
		return gyre.ConnectingReply{
			Credentials: &gyre.Credentials{UserID: data.User},
			Channels:    []string{"chat:" + data.User},
		}, nil
	})
	if err := node.Run(); err != nil {
		log.Fatal(err)
	}
	defer node.Shutdown(context.Background())
	srv := serveExample(node)
	defer srv.Close()

	c := dialExample(srv.URL + "/connection/websocket")
	defer c.close()
	c.call(`{"id":1,"connect":{"data":{"user":"alice"}}}`)
	channels, err := node.Channels("")
	if err != nil {
		log.Fatal(err)
	}
	for ch, info := range channels {
		fmt.Println(ch, info.NumClients)
	}

	refused := dialExample(srv.URL + "/connection/websocket")
	defer refused.close()
	refused.send(`{"id":1,"connect":{}}`)
	fmt.Println("closed:", refused.closeReason())
	// Output:
	// chat:alice 1
	// closed: 3500 invalid token
}

func ExampleNode_OnSubscribe() {
	node, err := gyre.NewNode(gyre.Config{AllowAnonymousConnectWithoutToken: true, Channels: chatChannels})
	if err != nil {
		log.Fatal(err)
	}
	// The handler replaces the namespace's allow_* rules: here only
	// channels whose name starts with "public-" may be subscribed.
	node.OnSubscribe(func(ctx context.Context, c *gyre.Client, e gyre.SubscribeEvent) (gyre.SubscribeReply, error) {
		if !strings.HasPrefix(e.Channel, "chat:public-") {
			return gyre.SubscribeReply{}, gyre.ErrorPermissionDenied
		}
		return gyre.SubscribeReply{Data: []byte(`{"welcome":true}`)}, nil
	})
	if err := node.Run(); err != nil {
		log.Fatal(err)
	}
	defer node.Shutdown(context.Background())
	srv := serveExample(node)
	defer srv.Close()

	c := dialExample(srv.URL + "/connection/websocket")
	defer c.close()
	c.call(`{"id":1,"connect":{}}`)
	fmt.Println(c.call(`{"id":2,"subscribe":{"channel":"chat:public-lobby"}}`))
	fmt.Println(c.call(`{"id":3,"subscribe":{"channel":"chat:staff"}}`))
	// Output:
	// {"id":2,"subscribe":{"data":{"welcome":true}}}
	// {"id":3,"error":{"code":103,"message":"permission denied"}}
}

func ExampleNode_OnRPC() {
	node, err := gyre.NewNode(gyre.Config{AllowAnonymousConnectWithoutToken: true})
	if err != nil {
		log.Fatal(err)
	}
	node.OnRPC(func(ctx context.Context, c *gyre.Client, e gyre.RPCEvent) (gyre.RPCReply, error) {
		switch e.Method {
		case "sum":
			var nums []int
			if err := json.Unmarshal(e.Data, &nums); err != nil {
				return gyre.RPCReply{}, gyre.ErrorBadRequest
			}
			total := 0
			for _, n := range nums {
				total += n
			}
			return gyre.RPCReply{Data: fmt.Appendf(nil, `{"sum":%d}`, total)}, nil
		default:
			return gyre.RPCReply{}, gyre.ErrorMethodNotFound
		}
	})
	if err := node.Run(); err != nil {
		log.Fatal(err)
	}
	defer node.Shutdown(context.Background())
	srv := serveExample(node)
	defer srv.Close()

	c := dialExample(srv.URL + "/connection/websocket")
	defer c.close()
	c.call(`{"id":1,"connect":{}}`)
	fmt.Println(c.call(`{"id":2,"rpc":{"method":"sum","data":[1,2,3]}}`))
	fmt.Println(c.call(`{"id":3,"rpc":{"method":"product","data":[]}}`))
	// Output:
	// {"id":2,"rpc":{"data":{"sum":6}}}
	// {"id":3,"error":{"code":104,"message":"method not found"}}
}

func ExampleNode_Presence() {
	node, err := gyre.NewNode(gyre.Config{Channels: chatChannels})
	if err != nil {
		log.Fatal(err)
	}
	node.OnConnecting(func(ctx context.Context, e gyre.ConnectingEvent) (gyre.ConnectingReply, error) {
		return gyre.ConnectingReply{Credentials: &gyre.Credentials{UserID: e.Name}}, nil
	})
	if err := node.Run(); err != nil {
		log.Fatal(err)
	}
	defer node.Shutdown(context.Background())
	srv := serveExample(node)
	defer srv.Close()

	for _, user := range []string{"bob", "alice"} {
		c := dialExample(srv.URL + "/connection/websocket")
		defer c.close()
		c.call(`{"id":1,"connect":{"name":"` + user + `"}}`)
		c.call(`{"id":2,"subscribe":{"channel":"chat:index"}}`)
	}

	// Presence is keyed by client id; the users behind them:
	presence, err := node.Presence("chat:index")
	if err != nil {
		log.Fatal(err)
	}
	var users []string
	for _, info := range presence {
		users = append(users, info.UserID)
	}
	slices.Sort(users)
	fmt.Println(users)

	stats, err := node.PresenceStats("chat:index")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(stats.NumClients, "clients,", stats.NumUsers, "users")
	// Output:
	// [alice bob]
	// 2 clients, 2 users
}

// runExampleNode creates and runs a node, or exits.
func runExampleNode(cfg gyre.Config) *gyre.Node {
	node, err := gyre.NewNode(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := node.Run(); err != nil {
		log.Fatal(err)
	}
	return node
}

// serveExample serves the node's WebSocket endpoint on a local test server.
func serveExample(node *gyre.Node) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/connection/websocket", gyre.NewWebsocketHandler(node, gyre.WebsocketConfig{}))
	return httptest.NewServer(mux)
}

// exampleClient speaks the JSON client protocol over a raw WebSocket, just
// enough for the examples to show what goes over the wire. Applications
// use an SDK (centrifuge-js, centrifuge-go, centrifuge-python).
type exampleClient struct {
	conn net.Conn
	rw   io.ReadWriter
}

func dialExample(url string) *exampleClient {
	url = "ws" + strings.TrimPrefix(url, "http")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, br, _, err := ws.Dial(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	c := &exampleClient{conn: conn, rw: conn}
	if br != nil {
		// The server spoke right after the handshake: read what was
		// buffered first.
		c.rw = struct {
			io.Reader
			io.Writer
		}{io.MultiReader(br, conn), conn}
	}
	return c
}

func (c *exampleClient) send(cmd string) {
	if err := wsutil.WriteClientText(c.conn, []byte(cmd)); err != nil {
		log.Fatal(err)
	}
}

// call sends one command and returns the JSON of the reply with its id.
func (c *exampleClient) call(cmd string) string {
	var head struct{ ID uint32 }
	if err := json.Unmarshal([]byte(cmd), &head); err != nil {
		log.Fatal(err)
	}
	c.send(cmd)
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		frame, err := wsutil.ReadServerText(c.rw)
		if err != nil {
			log.Fatal(err)
		}
		// One frame may hold several replies, one per line.
		for msg := range bytes.SplitSeq(frame, []byte("\n")) {
			r, err := protocol.DecodeReply(protocol.TypeJSON, msg)
			if err != nil {
				log.Fatal(err)
			}
			if r.Id == head.ID {
				return string(msg)
			}
		}
	}
}

// closeReason waits for the server to close the connection and returns
// its code and reason.
func (c *exampleClient) closeReason() string {
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, err := wsutil.ReadServerText(c.rw)
		var closed wsutil.ClosedError
		if errors.As(err, &closed) {
			return fmt.Sprintf("%d %s", closed.Code, closed.Reason)
		}
		if err != nil {
			return err.Error()
		}
	}
}

func (c *exampleClient) close() { _ = c.conn.Close() }
