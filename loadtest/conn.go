package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre/protocol"
)

// setupTimeout bounds the dial, the handshake and the connect and
// subscribe round trips of one connection.
const setupTimeout = 15 * time.Second

// conn is one client connection. One goroutine at a time owns it: a
// setter dials, connects and subscribes, then hands it to its reader,
// which reads until the connection ends and answers pings itself, so
// that an open connection costs one goroutine and its read buffer;
// message buffers come from a pool and only while a message is being
// handled.
type conn struct {
	p   *pool
	nc  net.Conn
	br  *bufio.Reader
	typ protocol.Type
	// id is the connection's number in the run, node the index of the
	// URL it is connected to.
	id, node int
	// rs is the reading side's state: compression and byte counts.
	rs readState

	received   atomic.Int64
	outOfOrder atomic.Int64
	lastAt     atomic.Int64 // Unix ns of the latest delivery
	// last and got are per publisher: the highest sequence number seen
	// and how many publications arrived. Only the reading goroutine
	// touches them until it has exited.
	last []uint64
	got  []uint64
	// stampAt is where the last publication's payload marker was.
	stampAt int
	// The deliveries of the frame being handled, counted into the shared
	// counters and histogram once per frame: a run of latencies in one
	// histogram bucket, and how many deliveries the frame had.
	runBucket, runCount int
	runMax              uint64
	frameDeliveries     int64
}

// errServerClosed ends a connection the server closed or disconnected.
var errServerClosed = errors.New("loadtest: closed by the server")

// dial opens the connection through nd and makes the WebSocket
// handshake, offering permessage-deflate when compress is set.
func (c *conn) dial(ctx context.Context, url string, nd *net.Dialer, compress bool) error {
	d := ws.Dialer{Timeout: setupTimeout, ReadBufferSize: 2048, WriteBufferSize: 1024, NetDial: nd.DialContext}
	if c.typ == protocol.TypeProtobuf {
		// The subprotocol is what the SDKs ask with; the query parameter
		// is the older way, which some servers still need.
		d.Protocols = []string{"centrifuge-protobuf"}
		url = withQuery(url, "cf_protocol=protobuf")
	}
	if compress {
		d.Extensions = deflateOffer
	}
	nc, br, hs, err := d.Dial(ctx, url)
	if errors.Is(err, ws.ErrHandshakeBadExtensions) {
		// Its own message names the wrong header.
		return fmt.Errorf("dial: %w: an extension that was not offered", errExtensionAnswer)
	}
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	if c.typ == protocol.TypeProtobuf && hs.Protocol != "" && hs.Protocol != "centrifuge-protobuf" {
		nc.Close()
		return fmt.Errorf("dial: the server chose subprotocol %q, not centrifuge-protobuf", hs.Protocol)
	}
	if c.rs.z, err = acceptAnswer(hs.Extensions); err != nil {
		nc.Close()
		return fmt.Errorf("dial: %w", err)
	}
	if br == nil {
		// 2 KiB holds the frame headers and the small messages of a
		// fan-out in one read syscall.
		br = bufio.NewReaderSize(nc, 2048)
	}
	c.nc, c.br = nc, br
	return nil
}

// withQuery adds a query parameter to url unless its name is there.
func withQuery(url, param string) string {
	name, _, _ := strings.Cut(param, "=")
	if strings.Contains(url, "?"+name+"=") || strings.Contains(url, "&"+name+"=") {
		return url
	}
	if strings.Contains(url, "?") {
		return url + "&" + param
	}
	return url + "?" + param
}

// setup connects with token and subscribes to channels, one round trip
// each, as the SDKs do.
func (c *conn) setup(token string, channels []string) error {
	if err := c.nc.SetDeadline(time.Now().Add(setupTimeout)); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if err := c.connect(token); err != nil {
		return err
	}
	if err := c.subscribe(channels); err != nil {
		return err
	}
	if err := c.nc.SetDeadline(time.Time{}); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	return nil
}

// connect sends the connect command and waits for its reply.
func (c *conn) connect(token string) error {
	connect := &protocol.Command{Id: 1, Connect: &protocol.ConnectRequest{Token: token, Name: "gyre-bench"}}
	if err := c.call([]*protocol.Command{connect}); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	return nil
}

// subscribe subscribes to channels in one frame and waits for every
// reply.
func (c *conn) subscribe(channels []string) error {
	if len(channels) == 0 {
		return nil
	}
	cmds := make([]*protocol.Command, len(channels))
	for i, ch := range channels {
		cmds[i] = &protocol.Command{Id: uint32(i + 2), Subscribe: &protocol.SubscribeRequest{Channel: ch}}
	}
	if err := c.call(cmds); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	return nil
}

// replyError is the server's error reply to a command: a refusal, where
// other errors of a call are the connection's.
type replyError struct {
	code    uint32
	message string
}

func (e *replyError) Error() string { return fmt.Sprintf("error %d %s", e.code, e.message) }

// call sends cmds in one frame and waits for a reply to each.
func (c *conn) call(cmds []*protocol.Command) error {
	msgs := make([][]byte, len(cmds))
	pending := make(map[uint32]bool, len(cmds))
	for i, cmd := range cmds {
		b, err := protocol.AppendCommand(nil, c.typ, cmd)
		if err != nil {
			return err
		}
		msgs[i] = b
		pending[cmd.Id] = true
	}
	if err := c.write(protocol.JoinFrame(nil, c.typ, msgs)); err != nil {
		return err
	}
	for len(pending) > 0 {
		op, bp, err := readMessage(c.br, c.control, &c.rs)
		if err != nil {
			return err
		}
		replies, err := decodeReplies(op, c.typ, *bp)
		putBuf(bp)
		if err != nil {
			return err
		}
		for _, r := range replies {
			if err := c.setupReply(r, pending); err != nil {
				return err
			}
		}
	}
	return nil
}

func decodeReplies(op ws.OpCode, typ protocol.Type, msg []byte) ([]*protocol.Reply, error) {
	if (op == ws.OpBinary) != (typ == protocol.TypeProtobuf) {
		return nil, fmt.Errorf("loadtest: %v frame on a %v connection", op, typ)
	}
	return protocol.DecodeReplies(typ, msg, nil)
}

func (c *conn) setupReply(r *protocol.Reply, pending map[uint32]bool) error {
	switch {
	case r.Id == 0 && r.Push == nil:
		return c.pong()
	case r.Id == 0:
		return pushError(r.Push)
	case r.Error != nil:
		return &replyError{code: r.Error.Code, message: r.Error.Message}
	}
	delete(pending, r.Id)
	return nil
}

// pushError is what a server push other than a publication means for a
// benchmark connection: nil for the harmless ones.
func pushError(p *protocol.Push) error {
	switch {
	case p.Disconnect != nil:
		return fmt.Errorf("%w: disconnect %d %s", errServerClosed, p.Disconnect.Code, p.Disconnect.Reason)
	case p.Unsubscribe != nil:
		return fmt.Errorf("unsubscribed from %s: %d %s", p.Channel, p.Unsubscribe.Code, p.Unsubscribe.Reason)
	}
	return nil
}

func (c *conn) write(frame []byte) error {
	var small [64]byte
	_, err := c.nc.Write(appendClientFrame(small[:0], c.dataOp(), frame))
	return err
}

// dataOp is the opcode of the connection's data frames.
func (c *conn) dataOp() ws.OpCode {
	if c.typ == protocol.TypeProtobuf {
		return ws.OpBinary
	}
	return ws.OpText
}

// pong answers the server's ping: an empty command.
func (c *conn) pong() error {
	if c.typ == protocol.TypeProtobuf {
		return c.write([]byte{0})
	}
	return c.write([]byte("{}"))
}

// control handles WebSocket control frames.
func (c *conn) control(op ws.OpCode, payload []byte) error {
	switch op {
	case ws.OpPing:
		var small [140]byte
		_, err := c.nc.Write(appendClientFrame(small[:0], ws.OpPong, payload))
		return err
	case ws.OpClose:
		code, reason := ws.ParseCloseFrameData(payload)
		return fmt.Errorf("%w: close %d %s", errServerClosed, code, reason)
	}
	return nil
}

// run reads until the connection ends, counting deliveries.
func (c *conn) run() error {
	for {
		op, bp, err := readMessage(c.br, c.control, &c.rs)
		if err != nil {
			return err
		}
		now := time.Now().UnixNano()
		if (op == ws.OpBinary) != (c.typ == protocol.TypeProtobuf) {
			putBuf(bp)
			return fmt.Errorf("loadtest: %v frame on a %v connection", op, c.typ)
		}
		if c.typ == protocol.TypeProtobuf {
			err = c.handleProtobuf(*bp, now)
		} else {
			err = c.handleJSON(*bp, now)
		}
		c.endFrame(now)
		putBuf(bp)
		if err != nil {
			return err
		}
	}
}

// handleJSON goes through the messages of a JSON frame; a publication is
// recognised by its payload alone.
func (c *conn) handleJSON(frame []byte, now int64) error {
	for msg := range protocol.JSONMessages(frame) {
		if len(msg) > 0 && msg[len(msg)-1] <= ' ' {
			msg = bytes.TrimSpace(msg)
		}
		switch {
		case len(msg) == 0:
		case len(msg) == 2 && msg[0] == '{' && msg[1] == '}':
			if err := c.pong(); err != nil {
				return err
			}
		default:
			if s, at, ok := findStampAt(msg, c.stampAt); ok {
				c.stampAt = at
				c.deliver(s, now)
				continue
			}
			if err := c.slowPath(msg); err != nil {
				return err
			}
		}
	}
	return nil
}

// handleProtobuf goes through the length-prefixed messages of a
// protobuf frame, walking to a publication's data without decoding.
func (c *conn) handleProtobuf(frame []byte, now int64) error {
	for len(frame) > 0 {
		l, k := binary.Uvarint(frame)
		if k <= 0 || l > uint64(len(frame)-k) {
			return fmt.Errorf("loadtest: bad protobuf frame: %w", protocol.ErrMalformed)
		}
		msg := frame[k : k+int(l)]
		frame = frame[k+int(l):]
		if len(msg) == 0 {
			if err := c.pong(); err != nil {
				return err
			}
			continue
		}
		// As in JSON, the payload is where the last one was, which saves
		// walking the fields.
		if s, ok := parseStampAt(msg, c.stampAt); ok {
			c.deliver(s, now)
			continue
		}
		if data, ok := pbPublicationData(msg); ok {
			if s, ok := findStamp(data); ok {
				c.stampAt = cap(msg) - cap(data) // data is a slice of msg
				c.deliver(s, now)
				continue
			}
		}
		if err := c.slowPath(msg); err != nil {
			return err
		}
	}
	return nil
}

// slowPath decodes a message that is not a benchmark publication.
func (c *conn) slowPath(msg []byte) error {
	r, err := protocol.DecodeReply(c.typ, msg)
	if err != nil {
		return err
	}
	switch {
	case r.Push != nil:
		if err := pushError(r.Push); err != nil {
			if errors.Is(err, errServerClosed) {
				return err
			}
			c.p.errs.add(err.Error())
		}
	case r.Error != nil:
		c.p.errs.add(fmt.Sprintf("error %d %s", r.Error.Code, r.Error.Message))
	}
	return nil
}

func (c *conn) deliver(s stamp, now int64) {
	c.frameDeliveries++
	v := nonNegative(now - s.sentNano)
	if b := bucketOf(v); b != c.runBucket || c.runCount == 0 {
		c.endRun()
		c.runBucket = b
	}
	c.runCount++
	c.runMax = max(c.runMax, v)
	if s.publisher >= len(c.last) {
		return
	}
	if s.seq <= c.last[s.publisher] {
		c.outOfOrder.Add(1)
	} else {
		c.last[s.publisher] = s.seq
	}
	c.got[s.publisher]++
}

// endRun records the run of latencies in one bucket.
func (c *conn) endRun() {
	if c.runCount > 0 {
		c.p.latency.recordRun(c.runBucket, uint64(c.runCount), c.runMax)
		c.runCount, c.runMax = 0, 0
	}
}

// endFrame counts the frame's deliveries into the shared counters.
func (c *conn) endFrame(now int64) {
	if c.frameDeliveries == 0 {
		return
	}
	c.endRun()
	c.received.Add(c.frameDeliveries)
	c.lastAt.Store(now)
	c.frameDeliveries = 0
}

// lost is how many of published (per publisher) this connection missed;
// call it only once run has returned.
func (c *conn) lost(published []uint64) int64 {
	var n int64
	for i, want := range published {
		if i < len(c.got) && c.got[i] < want {
			n += int64(want - c.got[i])
		}
	}
	return n
}

// close says goodbye with a normal closure and drops the connection.
func (c *conn) close() {
	var small [32]byte
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.nc.Write(appendClientFrame(small[:0], ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, "")))
	_ = c.nc.Close()
}
