package gyre

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gyrehq/gyre/internal/controlpb"
)

// Emulated connections (HTTP streaming, SSE) receive on a long response and
// send their commands in separate requests to the emulation endpoint, which
// may land on any node. The node that holds the response keeps the
// connection's session; a request for a session of another node travels to
// it through the broker's control channel, so no sticky sessions are
// needed.

// maxPendingEmulation bounds the command frames of one session waiting to
// run; an SDK sends one request per batch of commands and waits for
// replies, so only a misbehaving client gets near it.
const maxPendingEmulation = 256

// Errors of emulation requests.
var (
	errUnknownNode    = errors.New("gyre: emulation request for an unknown node")
	errUnknownSession = errors.New("gyre: emulation request for an unknown session")
	errEmulationBusy  = errors.New("gyre: too many emulation requests pending for the session")
)

// emulatedSession runs the command frames of one emulated connection one
// after another, in the order they arrived, without holding up whoever
// delivered them (a request handler, the broker's control delivery).
type emulatedSession struct {
	client  *Client
	mu      sync.Mutex
	pending [][]byte
	running bool
}

// submit queues a frame; false means the queue is full.
func (s *emulatedSession) submit(frame []byte) bool {
	s.mu.Lock()
	if len(s.pending) >= maxPendingEmulation {
		s.mu.Unlock()
		return false
	}
	s.pending = append(s.pending, frame)
	if s.running {
		s.mu.Unlock()
		return true
	}
	s.running = true
	s.mu.Unlock()
	go s.run()
	return true
}

func (s *emulatedSession) run() {
	for {
		s.mu.Lock()
		if len(s.pending) == 0 {
			s.pending = nil
			s.running = false
			s.mu.Unlock()
			return
		}
		frame := s.pending[0]
		s.pending[0] = nil
		s.pending = s.pending[1:]
		s.mu.Unlock()
		s.client.HandleFrame(frame)
	}
}

// sessionRegistry holds the emulated connections of this node by session.
// The zero value is ready.
type sessionRegistry struct {
	mu sync.RWMutex
	m  map[string]*emulatedSession
}

// add registers c under a new session id and returns the id.
func (r *sessionRegistry) add(c *Client) string {
	id := newID()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[string]*emulatedSession)
	}
	r.m[id] = &emulatedSession{client: c}
	return id
}

func (r *sessionRegistry) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, id)
}

func (r *sessionRegistry) get(id string) *emulatedSession {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.m[id]
}

// known tells whether a node announced itself recently.
func (r *nodeRegistry) known(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.nodes[id]
	return ok && time.Since(s.at) <= 3*NodeInfoInterval
}

// emulate hands the command frame of an emulation request to the session,
// here or on its node. A node that has not heard of the session's node
// refuses the request (the client reconnects) unless it started so
// recently that it may not have heard of every node yet.
func (n *Node) emulate(nodeID, session string, frame []byte) error {
	if nodeID == n.id {
		s := n.sessions.get(session)
		if s == nil {
			return errUnknownSession
		}
		if !s.submit(frame) {
			return errEmulationBusy
		}
		return nil
	}
	if !n.nodes.known(nodeID) && time.Since(n.startedAt) > 3*NodeInfoInterval {
		return errUnknownNode
	}
	err := n.sendControl(&controlpb.Command{To: nodeID, Emulation: &controlpb.Emulation{Session: session, Data: frame}})
	if err != nil {
		return fmt.Errorf("gyre: forward emulation request: %w", err)
	}
	return nil
}

// handleEmulation runs commands forwarded by another node for a session
// held by this one.
func (n *Node) handleEmulation(e *controlpb.Emulation) {
	s := n.sessions.get(e.Session)
	if s == nil {
		n.log.Debug("emulation request for an unknown session", "session", e.Session)
		return
	}
	if !s.submit(e.Data) {
		n.log.Warn("emulation request dropped: too many pending for the session", "session", e.Session, "client", s.client.id)
	}
}
