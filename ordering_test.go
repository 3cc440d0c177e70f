package gyre_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
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
		via        publishVia
	}{
		{"one publisher", 1, viaNode},
		{"four concurrent publishers", 4, viaNode},
		// A burst queues without waking writers; what it queued must
		// still go out in offset order with what others publish.
		{"one mixed batch publisher", 1, viaMixed},
		{"mixed batches and plain publishers", 4, viaMixed},
		// A run is queued to each subscriber in one step; nothing of
		// another publisher may come between, nor before it.
		{"runs", 1, viaRuns},
		{"runs and plain publishers", 4, viaRuns},
	}
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				n, url := newTestNode(t, b.Config(t, streamConfig()))
				channel := "ord:" + strconv.Itoa(tt.publishers) + strconv.Itoa(int(tt.via))
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
					recs[i] = recordOffsets(c, channel)
					recs[i].top = r.Subscribe.Offset
				}

				publishConcurrently(t, n, channel, total, tt.publishers, tt.via)

				for i, rec := range recs {
					offsets, err := rec.wait(total, 30*time.Second)
					if err != nil {
						t.Fatalf("subscriber %d (%s): %v after %d publications", i, rec.c.proto, err, len(offsets))
					}
					if err := checkContiguous(offsets, rec.top+1); err != nil {
						t.Fatalf("subscriber %d (%s): %v", i, rec.c.proto, err)
					}
				}
			})
		}
	})
}

// TestSubscribeDuringPublish subscribes clients while publications stream
// into the channel: each must get everything after the position its
// subscribe result gave, in order, with nothing lost or repeated between
// the reply and the first push. With recovery, the recovered publications
// and the live ones that follow make one sequence.
func TestSubscribeDuringPublish(t *testing.T) {
	const subscribers = 20
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		for _, tt := range []struct {
			recover, runs bool
		}{{false, false}, {true, false}, {false, true}, {true, true}} {
			recover := tt.recover
			t.Run(fmt.Sprintf("recover=%v,runs=%v", tt.recover, tt.runs), func(t *testing.T) {
				cfg := streamConfig()
				cfg.RecoveryMaxPublicationLimit = 2000
				n, url := newTestNode(t, b.Config(t, cfg))
				channel := "ord:live"
				first, err := n.Publish(channel, []byte(`{"i":0}`))
				if err != nil {
					t.Fatal(err)
				}
				stream := startStream(t, n, channel, tt.runs)
				recs := make([]*offsetRecorder, subscribers)
				for i := range recs {
					proto := protocol.TypeJSON
					if i%2 == 1 {
						proto = protocol.TypeProtobuf
					}
					c := dialRaw(t, url, proto)
					c.connect(connToken(t, "u"+strconv.Itoa(i), 0, nil))
					req := &protocol.SubscribeRequest{Channel: channel}
					if recover {
						req.Recover, req.Recoverable, req.Offset, req.Epoch = true, true, first.Offset, first.Epoch
					}
					r := c.call(&protocol.Command{Subscribe: req})
					if r.Error != nil || recover && !r.Subscribe.Recovered {
						t.Fatalf("subscribe %d: %+v", i, r)
					}
					top := r.Subscribe.Offset
					if recover {
						var recovered []uint64
						for _, p := range r.Subscribe.Publications {
							recovered = append(recovered, p.Offset)
						}
						if err := checkContiguous(recovered, first.Offset+1); err != nil {
							t.Fatalf("recovered publications of %d: %v", i, err)
						}
						// The result keeps the client's offset; the recovered
						// publications take it to where live ones go on.
						if top != first.Offset {
							t.Fatalf("subscriber %d: result offset %d, want the offset it recovered from, %d", i, top, first.Offset)
						}
						top += uint64(len(recovered))
					}
					recs[i] = recordOffsets(c, channel)
					recs[i].top = top
				}
				last := stream.finish()
				t.Logf("%d publications, subscribers joined from offset %d to %d", last-first.Offset, recs[0].top, recs[subscribers-1].top)
				for i, rec := range recs {
					offsets, err := rec.wait(int(last-rec.top), 30*time.Second)
					if err != nil {
						t.Fatalf("subscriber %d (%s, from offset %d): %v after %d publications", i, rec.c.proto, rec.top, err, len(offsets))
					}
					if err := checkContiguous(offsets, rec.top+1); err != nil {
						t.Fatalf("subscriber %d (%s, from offset %d): %v", i, rec.c.proto, rec.top, err)
					}
				}
			})
		}
	})
}

// stream publishes into a channel from one goroutine while a test does
// other things.
type stream struct {
	stop, done chan struct{}
	last       uint64
}

// startStream starts publishing and returns once some publications went
// out. It publishes at most 1,500 times (a few per millisecond) before
// finish is called, then 100 more in a tight loop; with runs, each time is
// a run of three through Node.PublishMany.
func startStream(t *testing.T, n *gyre.Node, channel string, runs bool) *stream {
	s := &stream{stop: make(chan struct{}), done: make(chan struct{})}
	started := make(chan struct{})
	t.Cleanup(func() { s.finish() })
	go func() {
		defer close(s.done)
		publish := func(i int) bool {
			data := []byte(`{"i":` + strconv.Itoa(i) + `}`)
			var res gyre.PublishResult
			var err error
			if runs {
				items := []gyre.PublishItem{{Data: data}, {Data: data}, {Data: data}}
				publishMany(n, channel, items)
				res, err = items[2].Result, errors.Join(items[0].Err, items[1].Err, items[2].Err)
			} else {
				res, err = n.Publish(channel, data)
			}
			if err != nil {
				t.Errorf("publish %d: %v", i, err)
				return false
			}
			s.last = res.Offset
			return true
		}
		i := 1
		for ; i <= 10; i++ {
			if !publish(i) {
				close(started)
				return
			}
		}
		close(started)
		// At most 1,500 publications while subscribers join, with runs
		// of three too, so that the stream never outgrows the history
		// (2,000) that their recovery reads, however slow the machine.
		last := 1500
		if runs {
			last = 500
		}
	loop:
		for ; i <= last; i++ {
			select {
			case <-s.stop:
				break loop
			default:
			}
			if !publish(i) {
				return
			}
			if i%4 == 0 {
				// Paced, so that subscribers join while it runs.
				time.Sleep(time.Millisecond)
			}
		}
		<-s.stop
		for end := i + 100; i < end; i++ {
			if !publish(i) {
				return
			}
		}
	}()
	<-started
	return s
}

// finish stops the stream and returns the offset of its last publication.
func (s *stream) finish() uint64 {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	return s.last
}

// publishVia says how publishConcurrently publishes.
type publishVia int

const (
	viaNode publishVia = iota
	// viaMixed: every other publisher goes through Node.PublishMany, in
	// batches of irregular lengths that interleave the channel with
	// another one.
	viaMixed
	// viaRuns: every other publisher goes through Node.PublishMany, in
	// runs of irregular lengths up to 300 (longer than a burst holds).
	viaRuns
)

// publishConcurrently publishes total publications into channel from the
// given number of goroutines, each in a tight loop.
func publishConcurrently(t *testing.T, n *gyre.Node, channel string, total, publishers int, via publishVia) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, publishers)
	for p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if via == viaRuns && p%2 == 0 {
				if err := publishRuns(n, channel, p, total, publishers); err != nil {
					errs <- err
				}
				return
			}
			publish := n.Publish
			if via == viaMixed && p%2 == 0 {
				if err := publishMixed(n, channel, p, total, publishers); err != nil {
					errs <- err
				}
				return
			}
			for i := p; i < total; i += publishers {
				data := []byte(`{"p":` + strconv.Itoa(p) + `,"i":` + strconv.Itoa(i) + `}`)
				if _, err := publish(channel, data); err != nil {
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

// publishRuns publishes publisher p's share of publishConcurrently's
// publications through Node.PublishMany.
func publishRuns(n *gyre.Node, channel string, p, total, publishers int) error {
	var run []gyre.PublishItem
	for i, k := p, 0; i < total; i += publishers {
		run = append(run, gyre.PublishItem{Data: []byte(`{"p":` + strconv.Itoa(p) + `,"i":` + strconv.Itoa(i) + `}`)})
		if len(run) < k*37%300+1 && i+publishers < total {
			continue
		}
		publishMany(n, channel, run)
		for _, it := range run {
			if it.Err != nil {
				return fmt.Errorf("publish run: %w", it.Err)
			}
		}
		run, k = run[:0], k+1
	}
	return nil
}

// publishMixed publishes publisher p's share of publishConcurrently's
// publications through Node.PublishMany, in batches of irregular lengths
// where they alternate, in stretches of irregular lengths, with
// publications to another channel.
func publishMixed(n *gyre.Node, channel string, p, total, publishers int) error {
	other := channel + "-other"
	var batch []gyre.PublishItem
	for i, k := p, 0; i < total; i += publishers {
		if k%3 == 1 {
			for range k % 4 {
				batch = append(batch, gyre.PublishItem{Channel: other, Data: []byte(`{}`)})
			}
		}
		batch = append(batch, gyre.PublishItem{Channel: channel, Data: []byte(`{"p":` + strconv.Itoa(p) + `,"i":` + strconv.Itoa(i) + `}`)})
		k++
		if len(batch) < k*29%200+1 && i+publishers < total {
			continue
		}
		n.PublishMany(batch)
		for _, it := range batch {
			if it.Err != nil {
				return fmt.Errorf("publish batch: %w", it.Err)
			}
		}
		batch = batch[:0]
	}
	return nil
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
	c   *rawConn
	top uint64

	mu      sync.Mutex
	offsets []uint64
	err     error
	done    chan struct{}
}

// recordOffsets starts recording; it reads until the connection ends.
func recordOffsets(c *rawConn, channel string) *offsetRecorder {
	rec := &offsetRecorder{c: c, done: make(chan struct{})}
	// Publications may share a frame with the subscribe reply.
	for _, p := range c.pushes {
		if p.Channel == channel && p.Pub != nil {
			rec.offsets = append(rec.offsets, p.Pub.Offset)
		}
	}
	c.pushes = nil
	go rec.run(channel)
	return rec
}

func (rec *offsetRecorder) run(channel string) {
	defer close(rec.done)
	for {
		replies, err := rec.c.readReplies(time.Minute)
		rec.mu.Lock()
		if err != nil {
			rec.err = err
			rec.mu.Unlock()
			return
		}
		for _, r := range replies {
			if r.Push != nil && r.Push.Channel == channel && r.Push.Pub != nil {
				rec.offsets = append(rec.offsets, r.Push.Pub.Offset)
			}
		}
		rec.mu.Unlock()
	}
}

// wait returns a copy of the offsets once want arrived, or what arrived
// and why not.
func (rec *offsetRecorder) wait(want int, timeout time.Duration) ([]uint64, error) {
	deadline := time.Now().Add(timeout)
	for {
		rec.mu.Lock()
		got := slices.Clone(rec.offsets)
		err := rec.err
		rec.mu.Unlock()
		switch {
		case len(got) >= want:
			return got, nil
		case err != nil:
			return got, fmt.Errorf("stream ended: %w", err)
		case time.Now().After(deadline):
			return got, fmt.Errorf("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
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
