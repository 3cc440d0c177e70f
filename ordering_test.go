package gyre_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
)

// streamConfig has a namespace "ord" whose channels keep enough history for
// every offset a test publishes.
func streamConfig() gyre.Config {
	return gyre.Config{Channels: gyre.ChannelConfig{
		WithoutNamespace: gyre.ChannelOptions{AllowSubscribeForClient: true},
		Namespaces: []gyre.Namespace{{Name: "ord", ChannelOptions: gyre.ChannelOptions{
			HistorySize: 2000, HistoryTTL: time.Minute, ForceRecovery: true,
			AllowSubscribeForClient: true,
		}}},
	}}
}

func TestPublicationOrder(t *testing.T) {
	const (
		subscribers = 50
		total       = 1000
	)
	tests := []struct {
		name       string
		publishers int
	}{
		{"one publisher", 1},
		{"four concurrent publishers", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, url := newTestNode(t, streamConfig())
			channel := "ord:" + strconv.Itoa(tt.publishers)
			recs := make([]*offsetRecorder, subscribers)
			for i := range recs {
				proto := protocol.TypeJSON
				if i%2 == 1 {
					proto = protocol.TypeProtobuf
				}
				c := dialRaw(t, url, proto)
				c.connect(connToken(t, "u"+strconv.Itoa(i), 0, nil))
				r := c.call(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: channel}})
				if r.Error != nil {
					t.Fatalf("subscribe %d: %+v", i, r.Error)
				}
				recs[i] = recordOffsets(c, channel, total)
				recs[i].top = r.Subscribe.Offset
			}

			publishConcurrently(t, n, channel, total, tt.publishers)

			for i, rec := range recs {
				offsets, err := rec.wait(30 * time.Second)
				if err != nil {
					t.Fatalf("subscriber %d (%s): %v after %d publications", i, rec.c.proto, err, len(offsets))
				}
				if err := checkContiguous(offsets, rec.top+1); err != nil {
					t.Fatalf("subscriber %d (%s): %v", i, rec.c.proto, err)
				}
			}
		})
	}
}

// TestSubscribeDuringPublish subscribes clients while publications stream
// into the channel: each must get everything after the position its
// subscribe result gave, in order, with nothing lost between the reply and
// the first push.
func TestSubscribeDuringPublish(t *testing.T) {
	const (
		subscribers = 20
		total       = 2000
	)
	n, url := newTestNode(t, streamConfig())
	channel := "ord:live"
	started := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i := range total {
			if i == 10 {
				close(started)
			}
			if _, err := n.Publish(channel, []byte(`{"i":`+strconv.Itoa(i)+`}`)); err != nil {
				t.Errorf("publish %d: %v", i, err)
				return
			}
		}
	}()
	<-started
	recs := make([]*offsetRecorder, subscribers)
	for i := range recs {
		proto := protocol.TypeJSON
		if i%2 == 1 {
			proto = protocol.TypeProtobuf
		}
		c := dialRaw(t, url, proto)
		c.connect(connToken(t, "u"+strconv.Itoa(i), 0, nil))
		r := c.call(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: channel}})
		if r.Error != nil {
			t.Fatalf("subscribe %d: %+v", i, r.Error)
		}
		top := r.Subscribe.Offset
		recs[i] = recordOffsets(c, channel, total-int(top))
		recs[i].top = top
	}
	<-finished
	for i, rec := range recs {
		offsets, err := rec.wait(30 * time.Second)
		if err != nil {
			t.Fatalf("subscriber %d (%s, from offset %d): %v after %d publications; contiguous: %v; first %v last %v", i, rec.c.proto, rec.top, err, len(offsets), checkContiguous(offsets, rec.top+1), offsets[:min(5, len(offsets))], offsets[max(0, len(offsets)-5):])
		}
		if err := checkContiguous(offsets, rec.top+1); err != nil {
			t.Fatalf("subscriber %d (%s, from offset %d): %v", i, rec.c.proto, rec.top, err)
		}
	}
}

// publishConcurrently publishes total publications into channel from the
// given number of goroutines, each in a tight loop.
func publishConcurrently(t *testing.T, n *gyre.Node, channel string, total, publishers int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, publishers)
	for p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i < total; i += publishers {
				data := []byte(`{"p":` + strconv.Itoa(p) + `,"i":` + strconv.Itoa(i) + `}`)
				if _, err := n.Publish(channel, data); err != nil {
					errs <- fmt.Errorf("publish %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// checkContiguous reports the first offset that breaks the sequence first,
// first+1, first+2, ...: a gap, a duplicate or a reordering.
func checkContiguous(offsets []uint64, first uint64) error {
	for i, off := range offsets {
		if want := first + uint64(i); off != want {
			return fmt.Errorf("publication %d has offset %d, want %d (previous %v)", i, off, want, offsets[max(0, i-3):i])
		}
	}
	return nil
}

// offsetRecorder reads a connection in the background and keeps the
// offsets of the publications of one channel, in arrival order.
type offsetRecorder struct {
	c    *rawConn
	top  uint64
	want int

	mu      sync.Mutex
	offsets []uint64
	err     error
	done    chan struct{}
}

func recordOffsets(c *rawConn, channel string, want int) *offsetRecorder {
	rec := &offsetRecorder{c: c, want: want, done: make(chan struct{})}
	// Publications may share a frame with the subscribe reply.
	for _, p := range c.pushes {
		if p.Channel == channel && p.Pub != nil {
			rec.offsets = append(rec.offsets, p.Pub.Offset)
		}
	}
	c.pushes = nil
	if len(rec.offsets) >= want {
		close(rec.done)
		return rec
	}
	go rec.run(channel)
	return rec
}

func (rec *offsetRecorder) run(channel string) {
	defer close(rec.done)
	for {
		replies, err := rec.c.readReplies(time.Minute)
		if err != nil {
			rec.mu.Lock()
			rec.err = err
			rec.mu.Unlock()
			return
		}
		rec.mu.Lock()
		for _, r := range replies {
			if r.Push != nil && r.Push.Channel == channel && r.Push.Pub != nil {
				rec.offsets = append(rec.offsets, r.Push.Pub.Offset)
			}
		}
		n := len(rec.offsets)
		rec.mu.Unlock()
		if n >= rec.want {
			return
		}
	}
}

// wait returns the offsets once want arrived, or what arrived and why not.
func (rec *offsetRecorder) wait(timeout time.Duration) ([]uint64, error) {
	select {
	case <-rec.done:
	case <-time.After(timeout):
		// Unblock the reader so the goroutine ends with the test.
		rec.c.nc.Close()
		<-rec.done
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.offsets) >= rec.want {
		return rec.offsets, nil
	}
	return rec.offsets, fmt.Errorf("stream ended: %v", rec.err)
}

// rawConn is a protocol client over a real WebSocket without a read
// goroutine of its own: the test decides when, and whether, it reads. It
// answers server pings only while it reads.
type rawConn struct {
	t     testing.TB
	nc    net.Conn
	rw    io.ReadWriter
	proto protocol.Type

	mu     sync.Mutex // guards writes and nextID
	nextID uint32
	// pushes seen while waiting for replies.
	pushes []*protocol.Push
}

func dialRaw(t testing.TB, url string, proto protocol.Type) *rawConn {
	t.Helper()
	c, err := tryDialRaw(url, proto)
	if err != nil {
		t.Fatal(err)
	}
	c.t = t
	t.Cleanup(func() { c.nc.Close() })
	return c
}

// tryDialRaw dials without a test; the caller closes the connection.
func tryDialRaw(url string, proto protocol.Type) (*rawConn, error) {
	d := ws.Dialer{Timeout: 10 * time.Second}
	if proto == protocol.TypeProtobuf {
		d.Protocols = []string{"centrifuge-protobuf"}
	}
	nc, br, _, err := d.Dial(context.Background(), url)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	var r io.Reader = nc
	if br != nil {
		r = br
	}
	return &rawConn{nc: nc, rw: struct {
		io.Reader
		io.Writer
	}{r, nc}, proto: proto}, nil
}

func (c *rawConn) dataOp() ws.OpCode {
	if c.proto == protocol.TypeProtobuf {
		return ws.OpBinary
	}
	return ws.OpText
}

// send writes the commands as one frame.
func (c *rawConn) send(cmds ...*protocol.Command) error {
	msgs := make([][]byte, 0, len(cmds))
	for _, cmd := range cmds {
		b, err := protocol.AppendCommand(nil, c.proto, cmd)
		if err != nil {
			return fmt.Errorf("encode command: %w", err)
		}
		msgs = append(msgs, b)
	}
	return c.writeFrame(c.dataOp(), protocol.JoinFrame(nil, c.proto, msgs))
}

func (c *rawConn) writeFrame(op ws.OpCode, frame []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return wsutil.WriteClientMessage(c.nc, op, frame)
}

// readReplies reads one data frame and decodes its replies. Pings are
// answered. A close frame comes back as a wsutil.ClosedError.
func (c *rawConn) readReplies(timeout time.Duration) ([]*protocol.Reply, error) {
	if err := c.nc.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	data, _, err := wsutil.ReadServerData(c.rw)
	if err != nil {
		return nil, err
	}
	replies, err := protocol.DecodeReplies(c.proto, data, nil)
	if err != nil {
		return nil, fmt.Errorf("decode replies %q: %w", data, err)
	}
	for _, r := range replies {
		if r.Id == 0 && r.Push == nil && r.Error == nil {
			if err := c.send(&protocol.Command{}); err != nil {
				return nil, err
			}
		}
	}
	return replies, nil
}

// tryCall sends a command and reads until its reply; pushes met on the
// way are kept in c.pushes.
func (c *rawConn) tryCall(cmd *protocol.Command) (*protocol.Reply, error) {
	c.mu.Lock()
	c.nextID++
	cmd.Id = c.nextID
	c.mu.Unlock()
	if err := c.send(cmd); err != nil {
		return nil, err
	}
	for {
		replies, err := c.readReplies(10 * time.Second)
		if err != nil {
			return nil, err
		}
		var reply *protocol.Reply
		for _, r := range replies {
			switch {
			case r.Id == cmd.Id:
				reply = r
			case r.Push != nil:
				c.pushes = append(c.pushes, r.Push)
			}
		}
		if reply != nil {
			return reply, nil
		}
	}
}

func (c *rawConn) call(cmd *protocol.Command) *protocol.Reply {
	c.t.Helper()
	r, err := c.tryCall(cmd)
	if err != nil {
		c.t.Fatalf("call %+v: %v", cmd, err)
	}
	return r
}

func (c *rawConn) connect(tok string) *protocol.ConnectResult {
	c.t.Helper()
	r := c.call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok}})
	if r.Error != nil {
		c.t.Fatalf("connect: error %d %s", r.Error.Code, r.Error.Message)
	}
	return r.Connect
}

// readUntilClosed reads and drops frames until the server closes the
// connection. It returns the close frame's code, or 0 when the connection
// ended without one.
func (c *rawConn) readUntilClosed(timeout time.Duration) (ws.StatusCode, error) {
	deadline := time.Now().Add(timeout)
	for {
		if err := c.nc.SetReadDeadline(deadline); err != nil {
			return 0, err
		}
		_, _, err := wsutil.ReadServerData(c.rw)
		var ce wsutil.ClosedError
		switch {
		case errors.As(err, &ce):
			return ce.Code, nil
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
			return 0, nil
		case errors.Is(err, ws.ErrProtocolNonZeroRsv), errors.Is(err, ws.ErrProtocolOpCodeReserved):
			return 0, err
		case err != nil:
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return 0, err
			}
			return 0, nil // reset by the peer
		}
	}
}
