package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/condwait"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

// TestSSESessionAcrossNodes opens an SSE session on node A and posts every
// later command to the emulation endpoint of node B, as a client behind a
// load balancer without sticky sessions would: B forwards them through
// Redis to A, and the replies come on A's stream.
func TestSSESessionAcrossNodes(t *testing.T) {
	t.Parallel()
	const ch = "chat:sse"
	srv := redistest.Start(t)
	cfg := func(name string) gyreproc.Config {
		return nodeConfig(name, redisAt(srv.Addr)).Set("sse.enabled", true)
	}
	a := gyreproc.Start(t, "A", cfg("A"))
	b := gyreproc.Start(t, "B", cfg("B"))

	s := openSSE(t, a, &protocol.Command{Id: 1, Connect: &protocol.ConnectRequest{Token: signToken(t, "alice"), Name: "cluster-sse"}})
	r := s.waitReply(1)
	if r.Error != nil || r.Connect.Session == "" || r.Connect.Node == "" {
		t.Fatalf("connect over SSE: %+v", r)
	}
	conn := r.Connect
	if id := localNodeID(t, a); conn.Node != id {
		t.Fatalf("session on node %s, want A (%s)", conn.Node, id)
	}

	s.post(b, conn.Node, conn.Session, &protocol.Command{Id: 2, Subscribe: &protocol.SubscribeRequest{Channel: ch}})
	if r := s.waitReply(2); r.Error != nil || !r.Subscribe.Recoverable {
		t.Fatalf("subscribe through node B: %+v", r)
	}
	for i := range 5 {
		b.MustCall(t, "publish", map[string]any{"channel": ch, "data": json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)}, nil)
	}
	s.wait("5 publications", func() bool { return len(wstest.PubsIn(s.pushes, ch)) >= 5 })
	s.mu.Lock()
	for i, p := range wstest.PubsIn(s.pushes, ch) {
		if p.Offset != uint64(i+1) || string(p.Data) != `{"i":`+strconv.Itoa(i)+`}` {
			t.Errorf("publication %d: %s at offset %d", i, p.Data, p.Offset)
		}
	}
	s.mu.Unlock()

	s.post(b, conn.Node, conn.Session, &protocol.Command{Id: 3, Presence: &protocol.PresenceRequest{Channel: ch}})
	if r := s.waitReply(3); r.Error != nil || r.Presence.GetPresence()[conn.Client].GetUser() != "alice" {
		t.Errorf("presence through node B: %+v", r)
	}
	s.post(b, conn.Node, conn.Session, &protocol.Command{Id: 4, History: &protocol.HistoryRequest{Channel: ch, Limit: -1}})
	if r := s.waitReply(4); r.Error != nil || len(r.History.GetPublications()) != 5 {
		t.Errorf("history through node B: %+v", r)
	}
}

// sseClient reads the replies and pushes of one SSE session.
type sseClient struct {
	t *testing.T

	mu      sync.Mutex
	cond    *sync.Cond
	replies map[uint32]*protocol.Reply
	pushes  []*protocol.Push
	ended   error
	done    chan struct{}
}

// openSSE opens an SSE session on node n with cmds as cf_connect.
func openSSE(t *testing.T, n *gyreproc.Node, cmds ...*protocol.Command) *sseClient {
	t.Helper()
	var frame [][]byte
	for _, c := range cmds {
		b, err := protocol.EncodeCommand(protocol.TypeJSON, c)
		if err != nil {
			t.Fatal(err)
		}
		frame = append(frame, b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	u := n.Base + "/connection/sse?cf_connect=" + url.QueryEscape(string(bytes.Join(frame, []byte("\n"))))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("open SSE on %s: %v", n.Name, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		t.Fatalf("open SSE on %s: HTTP %d, Content-Type %q", n.Name, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sseClient{t: t, replies: map[uint32]*protocol.Reply{}, done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	go s.read(resp)
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	return s
}

// read splits the stream into events and decodes each event's data.
func (s *sseClient) read(resp *http.Response) {
	defer close(s.done)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data:"):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		case line == "" && len(data) > 0:
			s.event(data)
			data = nil
		}
	}
	s.mu.Lock()
	s.ended = sc.Err()
	if s.ended == nil {
		s.ended = errStreamEnded
	}
	s.cond.Broadcast()
	s.mu.Unlock()
}

var errStreamEnded = errors.New("the SSE stream ended")

func (s *sseClient) event(data []byte) {
	replies, err := protocol.DecodeReplies(protocol.TypeJSON, data, nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.ended = err
		s.cond.Broadcast()
		return
	}
	for _, r := range replies {
		switch {
		case r.Id > 0:
			s.replies[r.Id] = r
		case r.Push != nil:
			s.pushes = append(s.pushes, r.Push)
		}
	}
	s.cond.Broadcast()
}

// emulationHTTP posts to the emulation endpoint; the limit is a hang
// guard, not a timing assertion.
var emulationHTTP = &http.Client{Timeout: 20 * time.Second}

// post sends cmd for the session to the emulation endpoint of node via.
func (s *sseClient) post(via *gyreproc.Node, nodeID, session string, cmd *protocol.Command) {
	s.t.Helper()
	c, err := protocol.EncodeCommand(protocol.TypeJSON, cmd)
	if err != nil {
		s.t.Fatal(err)
	}
	body, err := json.Marshal(map[string]string{"node": nodeID, "session": session, "data": string(c)})
	if err != nil {
		s.t.Fatal(err)
	}
	resp, err := emulationHTTP.Post(via.Base+"/emulation", "application/json", bytes.NewReader(body))
	if err != nil {
		s.t.Fatalf("emulation request to %s: %v", via.Name, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		s.t.Fatalf("emulation request to %s: HTTP %d", via.Name, resp.StatusCode)
	}
}

func (s *sseClient) waitReply(id uint32) *protocol.Reply {
	s.t.Helper()
	var r *protocol.Reply
	s.wait("reply "+strconv.Itoa(int(id)), func() bool {
		r = s.replies[id]
		return r != nil
	})
	return r
}

// wait waits until cond, called with s.mu held, is true; it fails the
// test when the stream ends first or after waitLimit.
func (s *sseClient) wait(what string, cond func() bool) {
	s.t.Helper()
	met := false
	var ended error
	condwait.Until(s.cond, waitLimit, func() bool {
		met, ended = cond(), s.ended
		return met || ended != nil
	})
	switch {
	case met:
	case ended != nil:
		s.t.Fatalf("waiting for %s: %v", what, ended)
	default:
		s.t.Fatalf("no %s within %v", what, waitLimit)
	}
}
