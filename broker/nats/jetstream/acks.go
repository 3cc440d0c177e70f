package jetstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/gyrehq/gyre/broker"
)

// acks sends the publications of Append and collects JetStream's acks on
// one subscription of the store: the client library's asynchronous
// publish costs a future, a timer and a JSON decoding per message, which
// at tens of thousands of publications a second is most of the store's
// CPU. Acks are read by hand (sequence, duplicate flag), errors by JSON.
type acks struct {
	nc     *nats.Conn
	sub    *nats.Subscription
	prefix string // reply subjects are prefix + id

	mu    sync.Mutex
	next  uint64
	slots map[uint64]ackSlot
}

type ackSlot struct {
	b *ackBatch
	i int
}

// ackBatch is the publications of one round of Append, waited for
// together.
type ackBatch struct {
	mu   sync.Mutex
	res  []ackResult
	ids  []uint64
	left int // acks awaited, plus one until wait starts
	done chan struct{}
	over bool // waiting ended: late acks are dropped
}

type ackResult struct {
	seq uint64
	err error
	// duplicate: the message id was seen within the stream's duplicate
	// window, and seq is the sequence of the message stored then.
	duplicate bool
}

func newAcks(nc *nats.Conn) (*acks, error) {
	a := &acks{nc: nc, prefix: nc.NewRespInbox() + ".", slots: make(map[uint64]ackSlot)}
	sub, err := nc.Subscribe(a.prefix+"*", a.handle)
	if err != nil {
		return nil, fmt.Errorf("jetstream: subscribe to acks: %w", err)
	}
	// The default limits drop acks of large batches.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("jetstream: subscribe to acks: %w", err)
	}
	a.sub = sub
	return a, nil
}

func (a *acks) close() { _ = a.sub.Unsubscribe() }

func newBatch(n int) *ackBatch {
	return &ackBatch{res: make([]ackResult, n), ids: make([]uint64, 0, n), left: 1, done: make(chan struct{})}
}

// publish sends m with a reply subject whose ack lands in b.res[i].
func (a *acks) publish(b *ackBatch, i int, m *nats.Msg) error {
	a.mu.Lock()
	a.next++
	id := a.next
	a.slots[id] = ackSlot{b, i}
	a.mu.Unlock()
	b.mu.Lock()
	b.ids = append(b.ids, id)
	b.left++
	b.mu.Unlock()
	m.Reply = a.prefix + strconv.FormatUint(id, 10)
	if err := a.nc.PublishMsg(m); err != nil {
		a.mu.Lock()
		_, mine := a.slots[id]
		delete(a.slots, id)
		a.mu.Unlock()
		if mine {
			b.mu.Lock()
			b.left--
			b.mu.Unlock()
		}
		return err
	}
	return nil
}

// noReply is a reply subject whose answers are dropped, for requests
// whose answer nobody waits for.
func (a *acks) noReply() string { return a.prefix + "0" }

func (a *acks) handle(m *nats.Msg) {
	id, err := strconv.ParseUint(m.Subject[len(a.prefix):], 10, 64)
	if err != nil {
		return
	}
	a.mu.Lock()
	slot, ok := a.slots[id]
	delete(a.slots, id)
	a.mu.Unlock()
	if !ok {
		return
	}
	r := parseAck(m)
	b := slot.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over {
		return
	}
	b.res[slot.i] = r
	if b.left--; b.left == 0 {
		close(b.done)
	}
}

// wait waits for every ack of b, at most timeout; the missing ones get
// an error.
func (a *acks) wait(b *ackBatch, timeout time.Duration) {
	b.mu.Lock()
	if b.left--; b.left == 0 {
		close(b.done)
	}
	n := b.left
	b.mu.Unlock()
	if n > 0 {
		t := time.NewTimer(timeout)
		select {
		case <-b.done:
		case <-t.C:
		}
		t.Stop()
	}
	a.mu.Lock()
	for _, id := range b.ids {
		delete(a.slots, id)
	}
	a.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.over = true
	if b.left > 0 {
		for i := range b.res {
			if b.res[i].seq == 0 && b.res[i].err == nil {
				b.res[i].err = fmt.Errorf("no ack: %w: %w", broker.ErrNotAvailable, nats.ErrTimeout)
			}
		}
	}
}

var (
	ackSeq       = []byte(`"seq":`)
	ackError     = []byte(`"error"`)
	ackDuplicate = []byte(`"duplicate":`)
)

// parseAck reads JetStream's answer to a publish: {"stream":..,"seq":N}
// or {"error":{...}}, or a status without body (no responders: no stream
// or no JetStream).
func parseAck(m *nats.Msg) ackResult {
	if len(m.Data) == 0 {
		status := m.Header.Get("Status")
		return ackResult{err: fmt.Errorf("status %s %s: %w", status, m.Header.Get("Description"), broker.ErrNotAvailable)}
	}
	if bytes.Contains(m.Data, ackError) {
		var resp struct {
			Error *js.APIError `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &resp); err != nil || resp.Error == nil {
			return ackResult{err: fmt.Errorf("bad ack %q", m.Data)}
		}
		return ackResult{err: resp.Error}
	}
	i := bytes.Index(m.Data, ackSeq)
	if i < 0 {
		return ackResult{err: fmt.Errorf("bad ack %q", m.Data)}
	}
	d := bytes.TrimLeft(m.Data[i+len(ackSeq):], " ")
	var seq uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			break
		}
		seq = seq*10 + uint64(c-'0')
	}
	if seq == 0 {
		return ackResult{err: fmt.Errorf("bad ack %q", m.Data)}
	}
	return ackResult{seq: seq, duplicate: isDuplicate(m.Data)}
}

// isDuplicate reads the ack's duplicate flag, written with a space
// before its value by some servers.
func isDuplicate(data []byte) bool {
	i := bytes.Index(data, ackDuplicate)
	if i < 0 {
		return false
	}
	return bytes.HasPrefix(bytes.TrimLeft(data[i+len(ackDuplicate):], " "), []byte("true"))
}
