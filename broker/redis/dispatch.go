package redis

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/internal/wirepb"
)

// work hands the shard's events to the EventHandler one at a time, in the
// order the connection received them.
func (s *subShard) work() {
	var lost []string
	for {
		var ev event
		select {
		case ev = <-s.queue:
		case <-s.b.stop:
			return
		}
		// Consecutive loss reports (a whole resubscription) go to the
		// handler in one call.
		for ev.lost {
			if ch, ok := strings.CutPrefix(ev.name, s.prefix); ok {
				lost = append(lost, ch)
			}
			select {
			case ev = <-s.queue:
				continue
			default:
				ev = event{}
			}
		}
		if len(lost) > 0 {
			s.reportLost(lost)
			lost = lost[:0]
		}
		if ev.name != "" {
			s.dispatch(ev)
		}
	}
}

func (s *subShard) reportLost(channels []string) {
	h, ok := s.b.handler.(SubscriptionLostHandler)
	if !ok {
		s.b.log.Warn("redis: pub/sub was interrupted; publications may be missing", "redis", s.where, "channels", len(channels))
		return
	}
	if err := h.HandleSubscriptionLost(append([]string(nil), channels...)); err != nil {
		s.b.log.Error("redis: handle subscription lost", "redis", s.where, "channels", len(channels), "error", err)
	}
}

// dispatch decodes one message and calls the handler. A message that does
// not decode is logged and dropped: it cannot come from a Gyre node of
// this version, and stopping delivery would hurt every other channel.
func (s *subShard) dispatch(ev event) {
	if err := s.deliver(ev); err != nil {
		s.b.log.Error("redis: deliver pub/sub message", "redis", s.where, "channel", ev.name, "error", err)
	}
}

func (s *subShard) deliver(ev event) error {
	var msg wirepb.Message
	// UnmarshalVT copies every byte field, so the payload string can be
	// read in place.
	if err := msg.UnmarshalVT(unsafe.Slice(unsafe.StringData(ev.payload), len(ev.payload))); err != nil {
		return fmt.Errorf("redis: decode message: %w", err)
	}
	if s.patterns {
		return s.deliverPattern(ev.name, &msg)
	}
	h := s.b.handler
	if msg.Type == wirepb.Message_CONTROL {
		return h.HandleControl(msg.Data)
	}
	channel, ok := strings.CutPrefix(ev.name, s.prefix)
	if !ok {
		return fmt.Errorf("redis: message on unknown pub/sub channel")
	}
	switch msg.Type {
	case wirepb.Message_PUBLICATION:
		return s.deliverPublication(h, channel, &msg)
	case wirepb.Message_JOIN, wirepb.Message_LEAVE:
		info, err := decodeInfo(msg.Info)
		if err != nil {
			return fmt.Errorf("redis: decode client info: %w", err)
		}
		if msg.Type == wirepb.Message_JOIN {
			return h.HandleJoin(channel, info)
		}
		return h.HandleLeave(channel, info)
	}
	return fmt.Errorf("redis: unknown message type %d", msg.Type)
}

func (s *subShard) deliverPublication(h broker.EventHandler, channel string, msg *wirepb.Message) error {
	pub, err := decodePublication(msg.Publication)
	if err != nil {
		return fmt.Errorf("redis: decode publication: %w", err)
	}
	pub.Offset = msg.Offset
	var prev *broker.Publication
	if msg.Delta && len(msg.Prev) > 0 {
		if prev, err = decodePublication(msg.Prev); err != nil {
			return fmt.Errorf("redis: decode previous publication: %w", err)
		}
	}
	sp := broker.StreamPosition{Offset: msg.Offset, Epoch: msg.Epoch}
	return h.HandlePublication(channel, pub, sp, msg.Delta, prev)
}
