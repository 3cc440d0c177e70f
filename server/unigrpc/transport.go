package unigrpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
)

// errStreamEnded is returned by a write after Consume returned: gRPC
// forbids sending on a stream whose handler is done.
var errStreamEnded = errors.New("unigrpc: stream ended")

// transport is one Consume stream seen by the engine: a unidirectional
// protobuf connection whose every push is one gRPC message.
type transport struct {
	stream       grpc.ServerStream
	writeTimeout time.Duration
	// timer ends a stream whose write takes longer than writeTimeout. It
	// is made by the first write and touched only by WriteFrame, which
	// the engine calls from one goroutine at a time.
	timer *time.Timer
	// ended is set when Consume returns; no send starts after it.
	ended atomic.Bool

	closeOnce sync.Once
	closing   chan struct{}
	// disconnect is why the stream was closed; set before closing is.
	disconnect *gyre.Disconnect
}

func newTransport(stream grpc.ServerStream, writeTimeout time.Duration) *transport {
	return &transport{stream: stream, writeTimeout: writeTimeout, closing: make(chan struct{})}
}

func (t *transport) Name() string            { return "uni_grpc" }
func (t *transport) Protocol() protocol.Type { return protocol.TypeProtobuf }
func (t *transport) Unidirectional() bool    { return true }

// WriteFrame sends each push of the frame as one gRPC message. The frame
// holds protobuf messages each prefixed by its uvarint length (see
// protocol.JoinFrame); the prefix is gRPC's business, so it is cut off. An
// empty message is a ping, which a consumer decodes as an empty Push.
//
// A send blocks while the consumer does not read and gRPC's flow control
// window is full; past writeTimeout the stream is closed, which ends the
// send.
func (t *transport) WriteFrame(frame []byte) error {
	if t.timer == nil {
		t.timer = time.AfterFunc(t.writeTimeout, t.writeTimedOut)
	} else {
		t.timer.Reset(t.writeTimeout)
	}
	defer t.timer.Stop()
	for i := 0; len(frame) > 0; i++ {
		size, n := binary.Uvarint(frame)
		if n <= 0 || size > uint64(len(frame)-n) {
			return fmt.Errorf("unigrpc: message %d of the frame: bad length prefix", i)
		}
		msg := frame[n : n+int(size)]
		frame = frame[n+int(size):]
		if t.ended.Load() {
			return errStreamEnded
		}
		if err := t.stream.SendMsg(rawPush(msg)); err != nil {
			return fmt.Errorf("unigrpc: send: %w", err)
		}
	}
	return nil
}

func (t *transport) writeTimedOut() { _ = t.Close(gyre.DisconnectWriteError) }

// Close wakes Consume, which ends the stream. The engine calls it after
// the disconnect push is written.
func (t *transport) Close(d *gyre.Disconnect) error {
	t.closeOnce.Do(func() {
		t.disconnect = d
		close(t.closing)
	})
	return nil
}
