package nats

import (
	"log/slog"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// Publish is PublishMany with one item.
func (b *Broker) Publish(channel string, data []byte, opts broker.PublishOptions) (broker.StreamPosition, bool, error) {
	item := [1]broker.PublishItem{{Channel: channel, Data: data, Opts: opts}}
	b.PublishMany(item[:])
	return item[0].Position, item[0].Suppressed, item[0].Err
}

// needsStore reports whether a publication needs a stream: history, an
// idempotency result or a version to keep.
func needsStore(o *broker.PublishOptions) bool {
	return (o.HistorySize > 0 && o.HistoryTTL > 0) || o.IdempotencyKey != "" || o.Version > 0
}

// toStore reports whether a publication goes through the store: when it
// needs a stream, or asks for delta, whose base the store keeps.
func (b *Broker) toStore(o *broker.PublishOptions) bool {
	return needsStore(o) || (b.store != nil && o.UseDelta)
}

// PublishMany publishes the items in order. Those that need a stream are
// appended to the store first, all in one Append (pipelined there), then
// every item is sent over NATS, in order, with its position. NATS keeps
// the order of one connection's messages, so per channel the items
// arrive in order.
func (b *Broker) PublishMany(items []broker.PublishItem) {
	if err := b.available(); err != nil {
		for i := range items {
			items[i].Position, items[i].Suppressed, items[i].Err = broker.StreamPosition{}, false, err
		}
		return
	}
	now := time.Now().UnixMilli()
	var stored []broker.StoreItem
	var storedAt []int
	for i := range items {
		it := &items[i]
		it.Position, it.Suppressed, it.Err = broker.StreamPosition{}, false, nil
		if !b.toStore(&it.Opts) {
			continue
		}
		if b.store == nil {
			it.Err = ErrNoHistory
			continue
		}
		stored = append(stored, broker.StoreItem{PublishItem: *it, Time: now})
		storedAt = append(storedAt, i)
	}
	var prevs map[int]*broker.Publication
	if len(stored) > 0 {
		b.store.Append(stored)
		for j, si := range stored {
			it := &items[storedAt[j]]
			it.Position, it.Suppressed, it.Err = si.Position, si.Suppressed, si.Err
			if si.Prev != nil {
				if prevs == nil {
					prevs = make(map[int]*broker.Publication)
				}
				prevs[storedAt[j]] = si.Prev
			}
		}
	}
	for i := range items {
		it := &items[i]
		if it.Err != nil || it.Suppressed {
			continue
		}
		b.sendPublication(it, now, prevs[i])
	}
}

// sendPublication sends one item over NATS. A publication the store
// holds already is published whatever happens to the send: it is kept
// and sent again once NATS is back (and subscribers read it from the
// store when what follows it arrives first).
func (b *Broker) sendPublication(it *broker.PublishItem, now int64, prev *broker.Publication) {
	subject := b.channelSubject(it.Channel)
	var data []byte
	if b.cfg.RawMode.Enabled {
		data = it.Data
	} else {
		pub := &broker.Publication{Offset: it.Position.Offset, Data: it.Data, Info: it.Opts.ClientInfo, Tags: it.Opts.Tags, Time: now, Trace: it.Opts.Trace}
		var err error
		if data, err = encodePublication(it.Channel, pub, it.Position, it.Opts.UseDelta, prev); err != nil {
			it.Err = err
			return
		}
	}
	err := b.send(subject, data)
	if err == nil {
		return
	}
	if it.Position.Offset == 0 {
		it.Err = err
		return
	}
	b.keepUnsent(subject, data)
	b.cfg.Logger.Warn("nats broker: publication stored but not sent; it is sent again when NATS is back",
		"channel", it.Channel, "offset", it.Position.Offset, "error", err)
}

// maxUnsent bounds the stored publications kept for sending again: past
// it the oldest are dropped, and subscribers read them from the store
// when a later publication of their channel arrives.
const maxUnsent = 10000

type unsentMessage struct {
	subject string
	data    []byte
}

func (b *Broker) keepUnsent(subject string, data []byte) {
	b.unsentMu.Lock()
	defer b.unsentMu.Unlock()
	if len(b.unsent) >= maxUnsent {
		b.unsent = b.unsent[1:]
	}
	b.unsent = append(b.unsent, unsentMessage{subject, data})
}

// resendUnsent sends what keepUnsent kept, once connected again.
func (b *Broker) resendUnsent() {
	b.unsentMu.Lock()
	msgs := b.unsent
	b.unsent = nil
	b.unsentMu.Unlock()
	for i, m := range msgs {
		if err := b.send(m.subject, m.data); err != nil {
			b.unsentMu.Lock()
			b.unsent = append(msgs[i:], b.unsent...)
			b.unsentMu.Unlock()
			b.cfg.Logger.Log(nil, slog.LevelWarn, "nats broker: sending stored publications again failed", "left", len(msgs)-i, "error", err)
			return
		}
	}
}
