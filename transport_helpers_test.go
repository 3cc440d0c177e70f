package gyre_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/condwait"
	"github.com/gyrehq/gyre/protocol"
)

// streamChannels is the channel config of the transport tests: "chat:"
// channels have presence, history and recovery.
var streamChannels = gyre.ChannelConfig{
	WithoutNamespace: gyre.ChannelOptions{AllowSubscribeForClient: true},
	Namespaces: []gyre.Namespace{{Name: "chat", ChannelOptions: gyre.ChannelOptions{
		Presence: true, JoinLeave: true, HistorySize: 10, HistoryTTL: time.Minute, ForceRecovery: true,
		AllowSubscribeForClient: true, AllowPresenceForSubscriber: true, AllowHistoryForSubscriber: true,
		AllowPublishForSubscriber: true,
	}}},
}

// transportServer is a node serving every transport on one httptest
// server.
type transportServer struct {
	node *gyre.Node
	url  string // http://host:port
}

type transportOptions struct {
	stream         gyre.StreamConfig
	emulation      gyre.EmulationConfig
	uniWebsocket   gyre.UniWebsocketConfig
	setup          func(*gyre.Node)
	wrap           func(http.Handler) http.Handler
	allowedOrigins []string
}

// newTransportServer starts a node (token secret filled in, test channels
// unless cfg has some) with every transport handler mounted.
func newTransportServer(t testing.TB, cfg gyre.Config, opts transportOptions) *transportServer {
	t.Helper()
	if cfg.Token.HMACSecretKey == "" {
		cfg.Token.HMACSecretKey = testSecret
	}
	if cfg.Channels.Namespaces == nil && !cfg.Channels.WithoutNamespace.AllowSubscribeForClient {
		cfg.Channels = streamChannels
	}
	n, err := gyre.NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if opts.setup != nil {
		opts.setup(n)
	}
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	var h http.Handler = transportMux(n, opts)
	if opts.wrap != nil {
		h = opts.wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
		srv.Close()
	})
	return &transportServer{node: n, url: srv.URL}
}

func transportMux(n *gyre.Node, opts transportOptions) *http.ServeMux {
	opts.stream.AllowedOrigins = opts.allowedOrigins
	opts.emulation.AllowedOrigins = opts.allowedOrigins
	opts.uniWebsocket.AllowedOrigins = opts.allowedOrigins
	mux := http.NewServeMux()
	mux.Handle("/connection/websocket", gyre.NewWebsocketHandler(n, gyre.WebsocketConfig{AllowedOrigins: opts.allowedOrigins, Compression: testDeflate}))
	mux.Handle("/connection/http_stream", gyre.NewHTTPStreamHandler(n, opts.stream))
	mux.Handle("/connection/sse", gyre.NewSSEHandler(n, opts.stream))
	mux.Handle("/emulation", gyre.NewEmulationHandler(n, opts.emulation))
	mux.Handle("/connection/uni_websocket", gyre.NewUniWebsocketHandler(n, opts.uniWebsocket))
	mux.Handle("/connection/uni_sse", gyre.NewUniSSEHandler(n, opts.stream))
	mux.Handle("/connection/uni_http_stream", gyre.NewUniHTTPStreamHandler(n, opts.stream))
	return mux
}

// messageReader yields the messages of a streaming response one by one.
type messageReader func() ([]byte, error)

// lineReader reads newline-delimited messages.
func lineReader(r io.Reader) messageReader {
	br := bufio.NewReaderSize(r, 64<<10)
	return func() ([]byte, error) {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), nil
	}
}

// delimitedReader reads uvarint length-prefixed messages.
func delimitedReader(r io.Reader) messageReader {
	br := bufio.NewReader(r)
	return func() ([]byte, error) {
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, err
		}
		msg := make([]byte, n)
		_, err = io.ReadFull(br, msg)
		return msg, err
	}
}

// eventReader reads the data of Server-Sent Events, as an EventSource does.
func eventReader(r io.Reader) messageReader {
	br := bufio.NewReader(r)
	return func() ([]byte, error) {
		var data [][]byte
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return nil, err
			}
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			if len(line) == 0 {
				if data != nil {
					return bytes.Join(data, []byte("\n")), nil
				}
				continue
			}
			if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				data = append(data, bytes.TrimPrefix(v, []byte(" ")))
			}
		}
	}
}

// streamClient is a raw protocol client of an emulated transport
// (http_stream or sse): it reads replies from the stream and sends
// commands to the emulation endpoint, as the SDK does.
type streamClient struct {
	t         testing.TB
	base      string
	emulation string // URL commands go to
	proto     protocol.Type
	resp      *http.Response
	cancel    context.CancelFunc

	mu      sync.Mutex
	cond    *sync.Cond
	id      uint32
	session string
	node    string
	replies map[uint32]*protocol.Reply
	pushes  []*protocol.Push
	pings   int
	noPong  bool
	ended   error // why the stream ended
	done    chan struct{}
}

// openStream starts an emulated connection with connect (and more
// commands) on transport "http_stream" or "sse".
func openStream(t testing.TB, base, transport string, proto protocol.Type, first ...*protocol.Command) *streamClient {
	t.Helper()
	var msgs [][]byte
	for _, cmd := range first {
		b, err := protocol.AppendCommand(nil, proto, cmd)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, b)
	}
	frame := protocol.JoinFrame(nil, proto, msgs)
	ctx, cancel := context.WithCancel(context.Background())
	var req *http.Request
	var err error
	switch transport {
	case "http_stream":
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, base+"/connection/http_stream", bytes.NewReader(frame))
		if err == nil && proto == protocol.TypeProtobuf {
			req.Header.Set("Content-Type", "application/octet-stream")
		} else if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	case "sse":
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"/connection/sse?cf_connect="+url.QueryEscape(string(frame)), nil)
	default:
		t.Fatalf("unknown transport %s", transport)
	}
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("%s: %v", transport, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("%s: status %d: %s", transport, resp.StatusCode, body)
	}
	c := &streamClient{
		t: t, base: base, emulation: base + "/emulation", proto: proto, resp: resp, cancel: cancel,
		replies: map[uint32]*protocol.Reply{}, done: make(chan struct{}),
	}
	for _, cmd := range first {
		c.id = max(c.id, cmd.Id)
	}
	c.cond = sync.NewCond(&c.mu)
	var read messageReader
	switch {
	case transport == "sse":
		read = eventReader(resp.Body)
	case proto == protocol.TypeProtobuf:
		read = delimitedReader(resp.Body)
	default:
		read = lineReader(resp.Body)
	}
	go c.readLoop(read)
	t.Cleanup(func() { c.close(); <-c.done })
	return c
}

// close drops the connection from the client side.
func (c *streamClient) close() {
	c.cancel()
	c.resp.Body.Close()
}

func (c *streamClient) readLoop(read messageReader) {
	defer close(c.done)
	for {
		msg, err := read()
		if err != nil {
			c.mu.Lock()
			c.ended = err
			c.cond.Broadcast()
			c.mu.Unlock()
			return
		}
		r, err := protocol.DecodeReply(c.proto, msg)
		if err != nil {
			c.t.Errorf("decode reply %q: %v", msg, err)
			c.mu.Lock()
			c.ended = err
			c.cond.Broadcast()
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		switch {
		case r.Id > 0:
			c.replies[r.Id] = r
		case r.Push != nil:
			c.pushes = append(c.pushes, r.Push)
		default:
			c.pings++
			if !c.noPong {
				go func() { _, _ = c.post(&protocol.Command{}) }()
			}
		}
		if r.Connect != nil {
			c.session, c.node = r.Connect.Session, r.Connect.Node
		}
		c.cond.Broadcast()
		c.mu.Unlock()
	}
}

// post sends commands to the emulation endpoint and returns the status.
func (c *streamClient) post(cmds ...*protocol.Command) (int, error) {
	var msgs [][]byte
	for _, cmd := range cmds {
		b, err := protocol.AppendCommand(nil, c.proto, cmd)
		if err != nil {
			return 0, err
		}
		msgs = append(msgs, b)
	}
	c.mu.Lock()
	session, node := c.session, c.node
	c.mu.Unlock()
	return postEmulation(c.emulation, c.proto, node, session, protocol.JoinFrame(nil, c.proto, msgs))
}

// postEmulation sends one EmulationRequest as the SDK does: JSON with the
// frame as a string, or protobuf.
func postEmulation(endpoint string, proto protocol.Type, node, session string, frame []byte) (int, error) {
	var body []byte
	ct := "application/json"
	if proto == protocol.TypeProtobuf {
		b, err := protocol.EncodeEmulationRequest(proto, &protocol.EmulationRequest{Node: node, Session: session, Data: frame})
		if err != nil {
			return 0, err
		}
		body, ct = b, "application/octet-stream"
	} else {
		body = fmt.Appendf(nil, `{"node":%s,"session":%s,"data":%s}`, strconv.Quote(node), strconv.Quote(session), protocol.AppendJSONString(nil, frame))
	}
	resp, err := http.Post(endpoint, ct, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// call sends a command through the emulation endpoint and waits for its
// reply on the stream.
func (c *streamClient) call(cmd *protocol.Command) *protocol.Reply {
	c.t.Helper()
	c.mu.Lock()
	c.id++
	cmd.Id = c.id
	c.mu.Unlock()
	status, err := c.post(cmd)
	if err != nil || status != http.StatusNoContent {
		c.t.Fatalf("emulation request: status %d, %v", status, err)
	}
	return c.waitReply(cmd.Id)
}

func (c *streamClient) waitReply(id uint32) *protocol.Reply {
	c.t.Helper()
	var r *protocol.Reply
	c.waitFor("reply "+strconv.Itoa(int(id)), func() bool {
		r = c.replies[id]
		return r != nil
	})
	return r
}

// waitFor waits until cond (called with c.mu held) holds.
func (c *streamClient) waitFor(what string, cond func() bool) {
	c.t.Helper()
	met := false
	var ended error
	condwait.Until(c.cond, 10*time.Second, func() bool {
		met = cond()
		if what != "end" {
			ended = c.ended
		}
		return met || ended != nil
	})
	switch {
	case met:
	case ended != nil:
		c.t.Fatalf("waiting for %s: stream ended: %v", what, ended)
	default:
		c.t.Fatalf("timed out waiting for %s", what)
	}
}

// waitEnd waits for the server to end the stream and returns the
// disconnect push sent before, if any.
func (c *streamClient) waitEnd() *protocol.Disconnect {
	c.t.Helper()
	c.waitFor("end", func() bool { return c.ended != nil })
	c.mu.Lock()
	defer c.mu.Unlock()
	if !errors.Is(c.ended, io.EOF) {
		c.t.Errorf("stream ended with %v, want EOF", c.ended)
	}
	for _, p := range c.pushes {
		if p.Disconnect != nil {
			return p.Disconnect
		}
	}
	return nil
}

func (c *streamClient) waitPush(what string, match func(*protocol.Push) bool) *protocol.Push {
	c.t.Helper()
	var found *protocol.Push
	c.waitFor(what, func() bool {
		for _, p := range c.pushes {
			if match(p) {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

// uniStream is a plain HTTP reader of a unidirectional stream.
type uniStream struct {
	t    testing.TB
	resp *http.Response
	read messageReader
}

// openUni opens uni_http_stream (POST body) or uni_sse (GET with
// cf_connect, or POST when post is set).
func openUni(t testing.TB, base, transport, connect string, post bool) *uniStream {
	t.Helper()
	var resp *http.Response
	var err error
	switch {
	case transport == "uni_sse" && !post:
		resp, err = http.Get(base + "/connection/uni_sse?cf_connect=" + url.QueryEscape(connect))
	default:
		resp, err = http.Post(base+"/connection/"+transport, "application/json", strings.NewReader(connect))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: status %d: %s", transport, resp.StatusCode, body)
	}
	u := &uniStream{t: t, resp: resp}
	if transport == "uni_sse" {
		u.read = eventReader(resp.Body)
	} else {
		u.read = lineReader(resp.Body)
	}
	return u
}

// next reads the next push.
func (u *uniStream) next() (*protocol.Push, []byte) {
	u.t.Helper()
	msg, err := u.read()
	if err != nil {
		u.t.Fatalf("read push: %v", err)
	}
	p, err := protocol.DecodePush(protocol.TypeJSON, msg)
	if err != nil {
		u.t.Fatalf("decode push %q: %v", msg, err)
	}
	return p, msg
}

// nextNonPing reads pushes until one that is not a ping.
func (u *uniStream) nextNonPing() *protocol.Push {
	u.t.Helper()
	for {
		p, msg := u.next()
		if string(msg) != "{}" {
			return p
		}
	}
}

// disconnectRecorder keeps the codes of OnDisconnect events.
type disconnectRecorder struct {
	mu    sync.Mutex
	codes map[string]uint32
}

func newDisconnectRecorder(n *gyre.Node) *disconnectRecorder {
	r := &disconnectRecorder{codes: map[string]uint32{}}
	n.OnDisconnect(func(c *gyre.Client, e gyre.DisconnectEvent) {
		r.mu.Lock()
		r.codes[c.ID()] = e.Disconnect.Code
		r.mu.Unlock()
	})
	return r
}

// wait returns the disconnect code of client id once it disconnected.
func (r *disconnectRecorder) wait(t testing.TB, id string) uint32 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		code, ok := r.codes[id]
		r.mu.Unlock()
		if ok {
			return code
		}
		if time.Now().After(deadline) {
			t.Fatalf("client %s did not disconnect", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
