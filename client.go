package gyre

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/websocket"
)

// Client states.
const (
	stateConnecting uint32 = iota
	stateConnected
	stateClosed
)

// Client is one connection. Its methods are safe for concurrent use.
type Client struct {
	node      *Node
	id        string
	transport Transport
	proto     protocol.Type
	// deflate, set when the connection negotiated permessage-deflate,
	// makes its queue take WebSocket frames instead of messages (see
	// enqueue and encodedPush.forClient).
	deflate *websocket.Compression
	uni     bool
	// hidden: the connection of Node.Tail, which no handler and no
	// metric sees.
	hidden bool
	// tslot is the slot of the client's transport in the tallies of
	// fan-outs (transportSlots); sdk (an index in clientNames) and
	// versioned say what the connect told of the client's SDK (ConnInfo),
	// set under mu.
	tslot     uint8
	sdk       uint8
	versioned bool
	// declineCompaction: the client's SDK offers channel compaction but
	// cannot use it (see compactionBroken).
	declineCompaction bool
	w                 *writer
	ctx               context.Context
	startedAt         time.Time

	state atomic.Uint32
	// awaitingPong is set when a ping was sent and cleared by any command.
	awaitingPong atomic.Bool
	// pingSlot is the pinger slot holding the client, plus one; 0: none.
	pingSlot atomic.Int32
	// slow is set once the queue overflowed, so that the disconnect is
	// started once however many messages keep coming.
	slow atomic.Bool

	mu       sync.Mutex
	user     string
	info     []byte
	expireAt int64
	subs     map[string]*subscription
	// mapFlows are the map subscriptions on their way to live (see
	// client_map.go); nil until the first.
	mapFlows map[string]*mapFlow
	expTimer *time.Timer
	// limits are the connection's command rate limits; nil when none
	// apply. Set under mu once connected, then read by the command loop.
	limits *clientLimits
	// refusalLogged: the connect was refused with a line of its own that
	// says more than the disconnect line would, which then goes to debug.
	refusalLogged bool

	closeOnce sync.Once
	closed    chan struct{}
	// transportOnce closes the transport once, from whichever path ends
	// the connection (the writer after a flush, or close directly).
	transportOnce sync.Once
	staleTimer    *time.Timer
}

// NewClient creates a connection's client for transport t. The transport's
// handler then feeds it frames with HandleFrame (bidirectional) or calls
// Connect (unidirectional), and calls Close when the connection ends.
func (n *Node) NewClient(ctx context.Context, t Transport) *Client {
	c := &Client{
		node:      n,
		id:        newID(),
		transport: t,
		proto:     t.Protocol(),
		uni:       t.Unidirectional(),
		tslot:     n.transports.slot(t.Name()),
		ctx:       ctx,
		startedAt: time.Now(),
		closed:    make(chan struct{}),
	}
	if ft, ok := t.(frameTransport); ok {
		c.deflate = ft.Compression()
	}
	c.w = newWriter(t, n.cfg.QueueMaxSize, c.onWriteError, c.closeTransport, n.obs)
	n.live.Store(c, struct{}{})
	n.liveClients.Add(1)
	if !c.uni {
		c.mu.Lock()
		c.staleTimer = time.AfterFunc(n.cfg.StaleCloseDelay, c.closeIfStale)
		c.mu.Unlock()
	}
	// Shutdown closes the clients it finds in n.live after setting
	// closing; one stored too late for its sweep sees closing here
	// instead, and closes itself. Else Shutdown would wait for it until
	// its stale timer.
	if n.closing.Load() {
		c.Disconnect(DisconnectShutdown)
	}
	return c
}

// closeIfStale closes a connection that did not send connect in time.
func (c *Client) closeIfStale() {
	if c.state.Load() == stateConnecting {
		c.node.log.Info("connection closed: no connect command in time", "client", c.id)
		c.Disconnect(DisconnectStale)
	}
}

// ID is the connection's unique id.
func (c *Client) ID() string { return c.id }

// UserID is the authenticated user, "" for anonymous connections.
func (c *Client) UserID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.user
}

// Info is the connection info set at connect.
func (c *Client) Info() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// Meta is the connection's meta: set by the connect token's meta claim,
// the connecting handler or a refresh handler, never sent to the client.
func (c *Client) Meta() []byte {
	if m, ok := c.node.metas.Load(c); ok {
		return m.([]byte)
	}
	return nil
}

// setMeta keeps m as the connection's meta. Metas live in a map of the
// node rather than in Client, so that the many connections without one
// pay nothing for it; close removes the entry. A close that ran before
// the store is caught by the state check after it.
func (c *Client) setMeta(m []byte) {
	if m == nil {
		return
	}
	c.node.metas.Store(c, m)
	if c.state.Load() == stateClosed {
		c.node.metas.Delete(c)
	}
}

// sessionTransport is a transport with a session id for the emulation
// endpoint.
type sessionTransport interface {
	Session() string
}

// Session is the session id of an emulated connection (HTTP streaming,
// SSE), "" for other transports.
func (c *Client) Session() string {
	if st, ok := c.transport.(sessionTransport); ok {
		return st.Session()
	}
	return ""
}

// Transport is the connection's transport.
func (c *Client) Transport() Transport { return c.transport }

// Context is the context of the request that opened the connection.
func (c *Client) Context() context.Context { return c.ctx }

// Channels lists the channels the client is subscribed to.
func (c *Client) Channels() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.subs))
	for ch := range c.subs {
		out = append(out, ch)
	}
	return out
}

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.closed }

// Send pushes an asynchronous message to the client.
func (c *Client) Send(data []byte) error {
	if c.state.Load() != stateConnected {
		return errors.New("gyre: client not connected")
	}
	c.enqueuePush(&protocol.Push{Message: &protocol.Message{Data: data}})
	return nil
}

// Disconnect closes the connection with d once what is queued is written.
func (c *Client) Disconnect(d *Disconnect) {
	c.close(d, true)
}

// Close ends the client when its transport is gone. d tells why (nil: the
// connection was closed by the peer).
func (c *Client) Close(d *Disconnect) {
	if d == nil {
		d = DisconnectConnectionClosed
	}
	c.close(d, false)
}

// HandleFrame decodes and runs the commands of one frame read from a
// bidirectional transport. It returns false once the client is closed; the
// transport's handler then stops reading.
func (c *Client) HandleFrame(frame []byte) bool {
	if c.state.Load() == stateClosed {
		return false
	}
	cmds, err := c.node.decoder.DecodeCommands(c.proto, frame, nil)
	if err != nil {
		c.node.log.Info("malformed command frame", "client", c.id, "user", c.UserID(), "error", err)
		c.Disconnect(DisconnectBadRequest)
		return false
	}
	return c.handleCommands(cmds, len(frame))
}

// handleCommands runs the commands of one frame, size bytes long: those of
// HandleFrame, and those a handler decoded itself because it had to check
// them before it answered (the first commands of an emulated connection).
func (c *Client) handleCommands(cmds []*protocol.Command, size int) bool {
	for i, cmd := range cmds {
		// Each command is counted with its share of the frame; the first
		// takes what does not divide.
		share := size / len(cmds)
		if i == 0 {
			share += size % len(cmds)
		}
		if !c.handleCommand(cmd, share) {
			return false
		}
	}
	return c.state.Load() != stateClosed
}

// handleCommand runs one command, size bytes of the frame, and measures
// it; it returns false when the client was disconnected.
func (c *Client) handleCommand(cmd *protocol.Command, size int) bool {
	method := commandMethod(cmd)
	c.node.obs.CommandReceived(c.transport.Name(), method, size)
	if method == "pong" {
		return c.runCommand(cmd, method)
	}
	start := time.Now()
	ok := c.runCommand(cmd, method)
	c.node.obs.CommandDone(method, time.Since(start))
	return ok
}

// runCommand runs one command of the given method.
func (c *Client) runCommand(cmd *protocol.Command, method string) bool {
	c.awaitingPong.Store(false)
	st := c.state.Load()
	if st == stateClosed {
		return false
	}
	if cmd.Connect != nil {
		if st != stateConnecting || cmd.Id == 0 {
			c.badRequest("connect on a connected client or without id")
			return false
		}
		return c.connectCmd(cmd.Id, cmd.Connect)
	}
	if st != stateConnected {
		c.badRequest("command before connect")
		return false
	}
	if cmd.Send != nil {
		// send has no reply: a client whose messages nobody reads would
		// never learn it. Closing with 3508, as Centrifugo does, tells it.
		h := c.node.handlers.message
		if h == nil {
			c.node.log.Info("send command refused: no message handler", "client", c.id, "user", c.UserID())
			c.Disconnect(DisconnectNotAvailable)
			return false
		}
		h(c, cmd.Send.Data)
		return true
	}
	if cmd.Id == 0 {
		// An empty command is the client's pong; an id-less command of any
		// other kind cannot be answered.
		if isEmptyCommand(cmd) {
			return true
		}
		c.badRequest("command without id")
		return false
	}
	if c.limits != nil && !c.limits.allow(cmd) {
		return c.overRateLimit(cmd, method)
	}
	var reply *protocol.Reply
	var err error
	switch {
	case cmd.Subscribe != nil:
		return c.subscribeCmd(cmd.Id, cmd.Subscribe)
	case cmd.Unsubscribe != nil:
		reply, err = c.unsubscribeCmd(cmd.Unsubscribe)
	case cmd.Publish != nil:
		reply, err = c.publishCmd(cmd.Publish)
	case cmd.Presence != nil:
		reply, err = c.presenceCmd(cmd.Presence)
	case cmd.PresenceStats != nil:
		reply, err = c.presenceStatsCmd(cmd.PresenceStats)
	case cmd.History != nil:
		reply, err = c.historyCmd(cmd.History)
	case cmd.Rpc != nil:
		reply, err = c.rpcCmd(cmd.Rpc)
	case cmd.Refresh != nil:
		reply, err = c.refreshCmd(cmd.Refresh)
	case cmd.SubRefresh != nil:
		reply, err = c.subRefreshCmd(cmd.SubRefresh)
	case cmd.Ping != nil:
		reply = &protocol.Reply{Ping: &protocol.PingResult{}}
	default:
		err = ErrorMethodNotFound
	}
	return c.finishCommand(method, cmd.Id, reply, err)
}

// commandMethod names a command's method for metrics.
func commandMethod(cmd *protocol.Command) string {
	switch {
	case cmd.Connect != nil:
		return "connect"
	case cmd.Subscribe != nil:
		return "subscribe"
	case cmd.Unsubscribe != nil:
		return "unsubscribe"
	case cmd.Publish != nil:
		return "publish"
	case cmd.Presence != nil:
		return "presence"
	case cmd.PresenceStats != nil:
		return "presence_stats"
	case cmd.History != nil:
		return "history"
	case cmd.Ping != nil:
		return "ping"
	case cmd.Send != nil:
		return "send"
	case cmd.Rpc != nil:
		return "rpc"
	case cmd.Refresh != nil:
		return "refresh"
	case cmd.SubRefresh != nil:
		return "sub_refresh"
	case cmd.Id == 0:
		return "pong"
	default:
		return "unknown"
	}
}

func isEmptyCommand(cmd *protocol.Command) bool {
	return cmd.Subscribe == nil && cmd.Unsubscribe == nil && cmd.Publish == nil &&
		cmd.Presence == nil && cmd.PresenceStats == nil && cmd.History == nil &&
		cmd.Ping == nil && cmd.Rpc == nil && cmd.Refresh == nil && cmd.SubRefresh == nil
}

// finishCommand sends the reply or the error of a command of the given
// method. A *Disconnect error closes the connection.
func (c *Client) finishCommand(method string, id uint32, reply *protocol.Reply, err error) bool {
	if err != nil {
		var d *Disconnect
		if errors.As(err, &d) {
			c.Disconnect(d)
			return false
		}
		e := toError(err)
		if e == ErrorInternal && !errors.Is(err, ErrorInternal) {
			c.node.log.Error("command failed", "client", c.id, "error", err)
		}
		reply = &protocol.Reply{Error: &protocol.Error{Code: e.Code, Message: e.Message, Temporary: e.Temporary}}
		c.node.obs.CommandFailed(method, e.Code)
	}
	if reply == nil {
		return true
	}
	reply.Id = id
	c.enqueueReply(method, reply)
	return c.state.Load() != stateClosed
}

func (c *Client) badRequest(why string) {
	c.node.log.Info("bad request from client", "client", c.id, "reason", why)
	c.Disconnect(DisconnectBadRequest)
}

// enqueue queues an encoded message of kind (a frame type, see
// Observer.MessagesSent); a full queue disconnects the client as slow. On
// a connection with permessage-deflate it becomes a frame of its own
// here, compressed for this connection alone: replies and single pushes.
// Fan-outs queue frames made once for all (enqueueIn).
func (c *Client) enqueue(kind string, msg []byte) {
	if c.deflate != nil {
		msg = c.deflate.AppendFrame(make([]byte, 0, len(msg)+16), c.proto == protocol.TypeProtobuf, msg)
	}
	c.sent(kind, len(msg))
	c.enqueueIn(msg, nil)
}

// enqueueIn queues msg, in the form the client's queue takes: an encoded
// message, or a WebSocket frame when c.deflate is set. With l set, the
// writer is woken when l's owner wakes its writers. It reports whether
// msg was queued: not when the queue is full (the client is closed as
// slow) or closed.
func (c *Client) enqueueIn(msg []byte, l *wakeList) bool {
	return c.queued(c.w.enqueue(msg, l))
}

// enqueueRunIn queues a run of messages, size bytes in all, in one step,
// and reports whether they were queued, as enqueueIn does.
func (c *Client) enqueueRunIn(msgs []string, size int, l *wakeList) bool {
	return c.queued(c.w.enqueueRun(msgs, size, l))
}

// queued reports whether r is enqueued, closing the client as slow when
// its queue was full.
func (c *Client) queued(r enqueueResult) bool {
	if r == enqueueFull {
		c.queueFull()
	}
	return r == enqueued
}

// queueFull disconnects a client whose queue would pass its bound.
func (c *Client) queueFull() {
	if c.slow.CompareAndSwap(false, true) {
		c.node.log.Info("client too slow: queue full", "client", c.id, "max_bytes", c.node.cfg.QueueMaxSize)
		go c.close(DisconnectSlow, false)
	}
}

// enqueueReply queues the reply to a command of the given method.
func (c *Client) enqueueReply(method string, r *protocol.Reply) {
	if c.proto == protocol.TypeJSON && !replyPayloadsJSON(r) {
		c.node.log.Info("binary payload in a reply to a JSON client", "client", c.id)
		go c.Disconnect(DisconnectBadProtocol)
		return
	}
	msg, err := protocol.AppendReply(nil, c.proto, r)
	if err != nil {
		c.node.log.Error("encode reply", "client", c.id, "error", err)
		return
	}
	c.enqueue(method, msg)
}

// replyPayloadsJSON reports whether every application payload of a reply
// can be embedded in JSON. Binary payloads reach JSON clients only when a
// protobuf client or the API published binary data.
func replyPayloadsJSON(r *protocol.Reply) bool {
	valid := func(b []byte) bool { return len(b) == 0 || json.Valid(b) }
	pubsValid := func(pubs []*protocol.Publication) bool {
		for _, p := range pubs {
			if !valid(p.Data) {
				return false
			}
		}
		return true
	}
	switch {
	case r.History != nil:
		return pubsValid(r.History.Publications)
	case r.Subscribe != nil:
		return valid(r.Subscribe.Data) && pubsValid(r.Subscribe.Publications) && pubsValid(r.Subscribe.State)
	case r.Rpc != nil:
		return valid(r.Rpc.Data)
	case r.Connect != nil:
		if !valid(r.Connect.Data) {
			return false
		}
		for _, sr := range r.Connect.Subs {
			if !valid(sr.Data) || !pubsValid(sr.Publications) {
				return false
			}
		}
	}
	return true
}

func (c *Client) enqueuePush(p *protocol.Push) {
	var msg []byte
	var err error
	if c.uni {
		msg, err = protocol.AppendPush(nil, c.proto, p)
	} else {
		msg, err = protocol.AppendReply(nil, c.proto, &protocol.Reply{Push: p})
	}
	if err != nil {
		c.node.log.Error("encode push", "client", c.id, "error", err)
		return
	}
	c.enqueue(pushKind(p), msg)
}

// sent tells the Observer of one message of kind, size bytes as queued,
// sent to the client alone.
func (c *Client) sent(kind string, size int) {
	if !c.hidden {
		c.node.obs.MessagesSent(c.transport.Name(), kind, 1, size)
	}
}

// pushKind is the frame type of a push, for metrics.
func pushKind(p *protocol.Push) string {
	switch {
	case p.Pub != nil:
		return "push_publication"
	case p.Join != nil:
		return "push_join"
	case p.Leave != nil:
		return "push_leave"
	case p.Unsubscribe != nil:
		return "push_unsubscribe"
	case p.Subscribe != nil:
		return "push_subscribe"
	case p.Message != nil:
		return "push_message"
	case p.Disconnect != nil:
		return "push_disconnect"
	case p.Connect != nil:
		return "push_connect"
	case p.Refresh != nil:
		return "push_refresh"
	default:
		return "unknown"
	}
}

func (c *Client) onWriteError(err error) {
	c.node.log.Debug("write failed", "client", c.id, "error", err)
	c.close(DisconnectWriteError, false)
}

// close ends the client: it leaves every channel, unregisters, and closes
// the transport with d (after the queue is written when flush is set).
func (c *Client) close(d *Disconnect, flush bool) {
	c.closeOnce.Do(func() {
		prev := c.state.Swap(stateClosed)
		c.node.pinger.remove(c)
		c.mu.Lock()
		if c.staleTimer != nil {
			c.staleTimer.Stop()
		}
		if c.expTimer != nil {
			c.expTimer.Stop()
		}
		user := c.user
		info := c.connInfoLocked()
		subs := c.subs
		c.subs = nil
		flows := c.mapFlows
		c.mapFlows = nil
		limits := c.limits
		refusalLogged := c.refusalLogged
		c.mu.Unlock()
		if limits != nil {
			limits.release()
		}
		c.node.metas.Delete(c)
		for _, f := range flows {
			f.stopTimer()
		}
		for _, s := range subs {
			c.leave(s, UnsubscribeCodeDisconnect, "disconnect", false)
		}
		if prev == stateConnected {
			c.node.hub.removeClient(c)
		}
		if c.uni && flush {
			c.enqueuePush(&protocol.Push{Disconnect: &protocol.Disconnect{Code: d.Code, Reason: d.Reason, Reconnect: d.Reconnect()}})
		}
		if flush {
			c.w.closeAfterFlush(d)
		} else {
			c.w.close()
			c.closeTransport(d)
		}
		close(c.closed)
		if c.hidden {
			return
		}
		c.node.obs.Disconnected(info, d.Code, prev == stateConnected)
		lvl := slog.LevelDebug
		if (d.Code >= 3500 && d.Code < 4000 || d == DisconnectSlow) && !refusalLogged {
			lvl = slog.LevelInfo
		}
		c.node.log.Log(context.Background(), lvl, "client disconnected", "client", c.id, "user", user, "code", d.Code, "reason", d.Reason)
		if prev == stateConnected {
			if h := c.node.handlers.disconnect; h != nil {
				h(c, DisconnectEvent{Disconnect: *d, Duration: time.Since(c.startedAt)})
			}
		}
	})
}

// overRateLimit answers a command refused by the rate limits: error 111,
// or disconnect 3013 when the node is configured so.
func (c *Client) overRateLimit(cmd *protocol.Command, method string) bool {
	// The first refusal of a connection is logged at info, the rest at
	// debug: a client looping on a refused command must not flood the log.
	lvl := slog.LevelDebug
	if !c.limits.logged {
		c.limits.logged = true
		lvl = slog.LevelInfo
	}
	c.node.log.Log(c.ctx, lvl, "client command over rate limit", "client", c.id, "user", c.UserID(), "method", method, "disconnect", c.node.rates.disconnect)
	if c.node.rates.disconnect {
		c.Disconnect(DisconnectTooManyRequests)
		return false
	}
	return c.finishCommand(method, cmd.Id, nil, ErrorTooManyRequests)
}

// closeTransport closes the transport with d, once. The node counts the
// connection gone only then, so that Shutdown can wait for close frames
// to be written.
func (c *Client) closeTransport(d *Disconnect) {
	c.transportOnce.Do(func() {
		_ = c.transport.Close(d)
		c.node.live.Delete(c)
		c.node.liveClients.Add(-1)
	})
}

// connInfoLocked is what the Observer is told about the connection; c.mu
// must be held.
func (c *Client) connInfoLocked() ConnInfo {
	return ConnInfo{Transport: c.transport.Name(), Client: clientNames[c.sdk], Versioned: c.versioned}
}

// connInfo is connInfoLocked taking c.mu.
func (c *Client) connInfo() ConnInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connInfoLocked()
}

// clientInfo is what others see of this client in a channel.
func (c *Client) clientInfo(chanInfo []byte) *broker.ClientInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &broker.ClientInfo{ClientID: c.id, UserID: c.user, ConnInfo: c.info, ChanInfo: chanInfo}
}
