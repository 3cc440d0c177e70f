package redis

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"unsafe"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/backlog"
	"github.com/gyrehq/gyre/broker/internal/pubconv"
	"github.com/gyrehq/gyre/broker/redis/internal/wirepb"
)

// errUndecodable marks a pub/sub message that could not be decoded. It
// may have been a publication, which this node's subscribers then never
// get: dispatch reports its channel (or scope) lost at its place.
var errUndecodable = errors.New("redis: undecodable pub/sub message")

// dispatchMax bounds how many pub/sub messages work takes from the queue
// at a time, and so how many publications one HandleRuns call carries.
const dispatchMax = 256

// work hands the shard's events to the EventHandler in the order the
// connection received them. What the reader queued while the handler was
// busy is taken at once: its publications go to the handler in one
// HandleRuns call, so that a busy channel's publications reach each
// subscriber as one run and each connection is woken once for all of them.
//
// A queue that stays non-empty tells the node it is behind (Broker.backlog),
// before the reader blocks and Redis holds the rest.
func (s *subShard) work() {
	d := dispatcher{s: s}
	events := make([]event, 0, dispatchMax)
	q := backlog.NewQueue(&s.b.backlog, cap(s.queue), func() int { return len(s.queue) })
	defer q.Stop()
	q.SetProbe(func(sent int64) { s.sendProbe(q, sent) })
	s.probes.Store(q)
	for {
		select {
		case ev := <-s.queue:
			events = append(events, ev)
		case <-s.b.stop:
			return
		}
	more:
		for len(events) < dispatchMax {
			select {
			case ev := <-s.queue:
				events = append(events, ev)
			default:
				q.Emptied()
				break more
			}
		}
		q.Took(len(events))
		d.dispatch(events)
		clear(events)
		events = events[:0]
		if len(s.queue) == 0 {
			q.Emptied()
		}
	}
}

// dispatcher turns a shard's events into handler calls; its buffers are
// kept between calls.
type dispatcher struct {
	s    *subShard
	pubs []broker.RunPublication
	// runs are gathered with nil Pubs, sizes[i] publications each, and
	// pointed into pubs when handed over: pubs may move as it grows.
	runs  []broker.Run
	sizes []int
	lost  []string
	// wanted holds, while a grouped message is added, the channels it
	// names that this node subscribed (addGroup).
	wanted []string
	// msg is the message being decoded, kept with the buffers of the
	// byte fields that are decoded further and not kept (see message):
	// a new message with a copy of its publication for each was a fifth
	// of the allocations of a broadcast on Redis.
	msg wirepb.Message
}

// message decodes payload into d.msg. The buffers of the publication,
// its predecessor and the client info are reused, as those are decoded
// into new values; the trace and the control data are handed on as they
// are, so they get buffers of their own.
func (d *dispatcher) message(payload string) (*wirepb.Message, error) {
	msg := &d.msg
	pub, prev, info := msg.Publication[:0], msg.Prev[:0], msg.Info[:0]
	*msg = wirepb.Message{Publication: pub, Prev: prev, Info: info}
	// UnmarshalVT copies every byte field, so the payload string can be
	// read in place.
	if err := msg.UnmarshalVT(unsafe.Slice(unsafe.StringData(payload), len(payload))); err != nil {
		return nil, fmt.Errorf("%w: %w", errUndecodable, err)
	}
	return msg, nil
}

// dispatch hands events to the handler in order. Consecutive publications
// of one channel become one run, and the runs go to HandleRuns together
// until an event of another kind, which is handled after them: a join, a
// leave, a control message, or loss reports (consecutive ones, a whole
// resubscription, in one call).
func (d *dispatcher) dispatch(events []event) {
	for _, ev := range events {
		if ev.lost {
			d.lose(ev.name)
			continue
		}
		if ev.name == d.s.probe {
			if q := d.s.probes.Load(); q != nil {
				if sent, err := strconv.ParseInt(ev.payload, 10, 64); err == nil {
					q.Probed(sent)
				}
			}
			continue
		}
		d.flushLost()
		if err := d.add(ev); err != nil {
			if ev.name != "" && ev.name == d.s.control {
				d.s.failed("handle_control_message")
			} else {
				d.s.failed("handle_client_message")
			}
			// It cannot come from a Gyre node of this version, and
			// stopping delivery would hurt every other channel.
			d.s.b.logRepeated("deliver", d.s.where, slog.LevelError, "redis: deliver pub/sub message", "channel", ev.name, "error", err)
			switch {
			case !errors.Is(err, errUndecodable):
			case ev.name != "" && ev.name == d.s.group:
				d.loseShard()
			default:
				d.lose(ev.name)
			}
		}
	}
	d.flushRuns()
	d.flushLost()
}

// lose reports the channel (or scope) of pub/sub name lost after the runs
// gathered so far and before anything after it.
func (d *dispatcher) lose(name string) {
	d.flushRuns()
	if ch, ok := strings.CutPrefix(name, d.s.prefix); ok {
		d.lost = append(d.lost, ch)
	}
}

// add decodes one message: a publication joins the runs, anything else is
// handled after the runs before it.
func (d *dispatcher) add(ev event) error {
	s := d.s
	msg, err := d.message(ev.payload)
	if err != nil {
		return err
	}
	if s.patterns {
		scope, channel, rp, err := s.patternPublication(ev.name, msg)
		if err != nil {
			return err
		}
		d.addPublication(scope, channel, rp)
		return nil
	}
	h := s.b.handler
	if msg.Type == wirepb.Message_CONTROL {
		d.flushRuns()
		return h.HandleControl(msg.Data)
	}
	if s.group != "" && ev.name == s.group {
		return d.addGroup(msg)
	}
	channel, ok := strings.CutPrefix(ev.name, s.prefix)
	if !ok {
		return fmt.Errorf("redis: message on unknown pub/sub channel")
	}
	switch msg.Type {
	case wirepb.Message_PUBLICATION, wirepb.Message_MAP_CHANGE:
		decode := decodeRunPublication
		if msg.Type == wirepb.Message_MAP_CHANGE {
			decode = decodeMapChange
		}
		rp, err := decode(msg)
		if err != nil {
			return fmt.Errorf("%w: %w", errUndecodable, err)
		}
		d.addPublication("", channel, rp)
		return nil
	case wirepb.Message_JOIN, wirepb.Message_LEAVE:
		info, err := decodeInfo(msg.Info)
		if err != nil {
			return fmt.Errorf("redis: decode client info: %w", err)
		}
		d.flushRuns()
		if msg.Type == wirepb.Message_JOIN {
			return h.HandleJoin(channel, info)
		}
		return h.HandleLeave(channel, info)
	}
	return fmt.Errorf("%w: unknown message type %d", errUndecodable, msg.Type)
}

// addPublication appends rp to the last run when it is of the same channel
// and scope, else starts a run.
func (d *dispatcher) addPublication(scope, channel string, rp broker.RunPublication) {
	if k := len(d.runs) - 1; k < 0 || d.runs[k].Channel != channel || d.runs[k].Scope != scope {
		d.runs = append(d.runs, broker.Run{Channel: channel, Scope: scope})
		d.sizes = append(d.sizes, 0)
	}
	d.pubs = append(d.pubs, rp)
	d.sizes[len(d.sizes)-1]++
}

// flushRuns hands the runs gathered so far to the handler.
func (d *dispatcher) flushRuns() {
	if len(d.runs) == 0 {
		return
	}
	from := 0
	for i, n := range d.sizes {
		d.runs[i].Pubs = d.pubs[from : from+n]
		from += n
	}
	if err := d.s.b.handler.HandleRuns(d.runs); err != nil {
		d.s.failed("handle_client_message")
		d.s.b.logRepeated("handle", d.s.where, slog.LevelError, "redis: handle publications", "publications", len(d.pubs), "error", err)
	}
	clear(d.runs)
	d.runs, d.sizes = d.runs[:0], d.sizes[:0]
	clear(d.pubs) // the buffer must not keep the publications alive
	d.pubs = d.pubs[:0]
}

// flushLost reports the channels (or scopes) whose subscription was
// restored after an interruption, or whose publication could not be
// decoded.
func (d *dispatcher) flushLost() {
	if len(d.lost) == 0 {
		return
	}
	d.s.reportLost(d.lost)
	clear(d.lost)
	d.lost = d.lost[:0]
}

func (s *subShard) reportLost(names []string) {
	if s.patterns {
		s.reportScopesLost(names)
		return
	}
	h, ok := s.b.handler.(SubscriptionLostHandler)
	if !ok {
		s.b.log.Warn("redis: pub/sub was interrupted; publications may be missing", "redis", s.where, "channels", len(names))
		return
	}
	if err := h.HandleSubscriptionLost(append([]string(nil), names...)); err != nil {
		s.b.logRepeated("lost", s.where, slog.LevelError, "redis: handle subscription lost", "channels", len(names), "error", err)
	}
}

func (s *subShard) reportScopesLost(scopes []string) {
	h, ok := s.b.handler.(broker.PatternScopeLostHandler)
	if !ok {
		s.b.log.Warn("redis: pattern pub/sub was interrupted; publications may be missing", "redis", s.where, "scopes", len(scopes))
		return
	}
	if err := h.HandlePatternScopeLost(append([]string(nil), scopes...)); err != nil {
		s.b.logRepeated("lost", s.where, slog.LevelError, "redis: handle pattern scope lost", "scopes", len(scopes), "error", err)
	}
}

// decodeRunPublication decodes the publication of a message.
func decodeRunPublication(msg *wirepb.Message) (broker.RunPublication, error) {
	pub, err := pubconv.Decode(msg.Publication)
	if err != nil {
		return broker.RunPublication{}, fmt.Errorf("redis: decode publication: %w", err)
	}
	pub.Offset, pub.Trace = msg.Offset, msg.Trace
	rp := broker.RunPublication{Pub: pub, Position: broker.StreamPosition{Offset: msg.Offset, Epoch: msg.Epoch}, Delta: msg.Delta}
	if msg.Delta && len(msg.Prev) > 0 {
		if rp.Prev, err = pubconv.Decode(msg.Prev); err != nil {
			return broker.RunPublication{}, fmt.Errorf("redis: decode previous publication: %w", err)
		}
	}
	return rp, nil
}
