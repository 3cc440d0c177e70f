package wstest

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"

	"github.com/gobwas/httphead"
	"github.com/gobwas/ws"
)

// deflateOffer is what Chrome and Firefox send.
var deflateOffer = httphead.Option{
	Name:       []byte("permessage-deflate"),
	Parameters: httphead.Parameters{},
}

func init() { deflateOffer.Parameters.Set([]byte("client_max_window_bits"), nil) }

// formatOption writes an extension as in the header, parameters in order.
func formatOption(o httphead.Option) string {
	s := string(o.Name)
	o.Parameters.ForEach(func(k, v []byte) bool {
		s += "; " + string(k)
		if len(v) > 0 {
			s += "=" + string(v)
		}
		return true
	})
	return s
}

// WireStats counts what a client received in data messages.
type WireStats struct {
	// Messages is the number of data messages; Compressed how many of them
	// had RSV1 set.
	Messages, Compressed int
	// WireBytes is the payload bytes as received, InflatedBytes after
	// inflating the compressed ones.
	WireBytes, InflatedBytes int
}

// Negotiated reports whether the server accepted permessage-deflate, and
// its answer.
func (c *Client) Negotiated() (bool, string) { return c.deflate, c.deflateAnswer }

// Wire returns the counts of the data messages received so far.
func (c *Client) Wire() WireStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wire
}

// readDeflateMessage reads the next message on a connection that
// negotiated compression, answering nothing itself: control frames come
// back as they are.
func (c *Client) readDeflateMessage() (op ws.OpCode, payload []byte, err error) {
	var msg []byte
	var compressed bool
	first := true
	for {
		f, err := ws.ReadFrame(c.conn)
		if err != nil {
			return 0, nil, err
		}
		if f.Header.OpCode.IsControl() {
			return f.Header.OpCode, f.Payload, nil
		}
		if first {
			op, compressed, first = f.Header.OpCode, f.Header.Rsv1(), false
		} else if f.Header.Rsv != 0 {
			return 0, nil, fmt.Errorf("reserved bits on a continuation frame")
		}
		msg = append(msg, f.Payload...)
		if f.Header.Fin {
			break
		}
	}
	c.mu.Lock()
	c.wire.Messages++
	c.wire.WireBytes += len(msg)
	c.mu.Unlock()
	if compressed {
		r := flate.NewReader(io.MultiReader(bytes.NewReader(msg), bytes.NewReader([]byte{0, 0, 0xff, 0xff, 1, 0, 0, 0xff, 0xff})))
		out, err := io.ReadAll(r)
		if err != nil {
			return 0, nil, fmt.Errorf("inflate a message of %d bytes: %w", len(msg), err)
		}
		msg = out
	}
	c.mu.Lock()
	if compressed {
		c.wire.Compressed++
	}
	c.wire.InflatedBytes += len(msg)
	c.mu.Unlock()
	return op, msg, nil
}

// deflateMessage compresses one client message as permessage-deflate
// without context takeover.
func deflateMessage(p []byte) []byte {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestSpeed)
	_, _ = w.Write(p)
	_ = w.Flush()
	return bytes.TrimSuffix(b.Bytes(), []byte{0, 0, 0xff, 0xff})
}
