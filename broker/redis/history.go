package redis

import (
	"context"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/pubconv"
	"github.com/redis/rueidis"
)

// History runs the history script (lua/history.lua): it creates the
// stream's meta when missing, keeps it alive for opts.MetaTTL (or
// Config.HistoryMetaTTL), and returns the publications the filter selects
// with the stream top, following the same rules as the memory broker.
func (b *Broker) History(channel string, opts broker.HistoryOptions) ([]*broker.Publication, broker.StreamPosition, error) {
	if err := b.checkOpen(); err != nil {
		return nil, broker.StreamPosition{}, err
	}
	return b.history(channel, opts)
}

func (b *Broker) history(channel string, opts broker.HistoryOptions) ([]*broker.Publication, broker.StreamPosition, error) {
	ci, si := b.e.locate(channel)
	base := b.e.bases[si]
	if opts.Peek {
		sp, err := b.peek(ci, base, channel)
		return nil, sp, err
	}
	f := opts.Filter
	hasSince, sinceOffset, sinceEpoch := "0", "0", ""
	if f.Since != nil {
		hasSince, sinceOffset, sinceEpoch = "1", strconv.FormatUint(f.Since.Offset, 10), f.Since.Epoch
	}
	reverse := "0"
	if f.Reverse {
		reverse = "1"
	}
	keys := []string{streamKey(base, channel), metaKey(base, channel)}
	args := []string{
		newEpoch(),
		strconv.FormatInt(millis(orDefault(opts.MetaTTL, b.cfg.HistoryMetaTTL)), 10),
		hasSince,
		sinceOffset,
		sinceEpoch,
		strconv.Itoa(f.Limit),
		reverse,
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.IOTimeout)
	defer cancel()
	res, err := execScript(ctx, historyScript, b.e.clients[ci], keys, args, true).ToArray()
	if err != nil {
		return nil, broker.StreamPosition{}, wrapErr("history", err)
	}
	return parseHistoryResult(res)
}

// peek reads the stream top from the meta hash, writing nothing: a
// missing meta is the zero position.
func (b *Broker) peek(ci int, base, channel string) (broker.StreamPosition, error) {
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.IOTimeout)
	defer cancel()
	c := b.e.clients[ci]
	vals, err := c.Do(ctx, c.B().Hmget().Key(metaKey(base, channel)).Field("e", "o").Build()).ToArray()
	if err != nil {
		return broker.StreamPosition{}, wrapErr("history", err)
	}
	if len(vals) != 2 || vals[0].IsNil() {
		return broker.StreamPosition{}, nil
	}
	epoch, err := vals[0].ToString()
	if err != nil {
		return broker.StreamPosition{}, fmt.Errorf("redis: stream meta of %q: %w", channel, err)
	}
	var offset uint64
	if !vals[1].IsNil() {
		s, err := vals[1].ToString()
		if err == nil {
			offset, err = strconv.ParseUint(s, 10, 64)
		}
		if err != nil {
			return broker.StreamPosition{}, fmt.Errorf("redis: stream meta of %q: offset: %w", channel, err)
		}
	}
	return broker.StreamPosition{Offset: offset, Epoch: epoch}, nil
}

func parseHistoryResult(res []rueidis.RedisMessage) ([]*broker.Publication, broker.StreamPosition, error) {
	if len(res) < 3 || len(res)%2 == 0 {
		return nil, broker.StreamPosition{}, fmt.Errorf("redis: history script returned %d values", len(res))
	}
	top, err := res[0].AsInt64()
	if err != nil {
		return nil, broker.StreamPosition{}, fmt.Errorf("redis: history script top: %w", err)
	}
	epoch, err := res[1].ToString()
	if err != nil {
		return nil, broker.StreamPosition{}, fmt.Errorf("redis: history script epoch: %w", err)
	}
	sp := broker.StreamPosition{Offset: uint64(top), Epoch: epoch}
	if flag, _ := res[2].AsInt64(); flag == 1 {
		return nil, sp, broker.ErrUnrecoverablePosition
	}
	n := (len(res) - 3) / 2
	if n == 0 {
		return nil, sp, nil
	}
	pubs := make([]*broker.Publication, 0, n)
	for i := 3; i < len(res); i += 2 {
		offset, err := res[i].AsInt64()
		if err != nil {
			return nil, sp, fmt.Errorf("redis: history entry offset: %w", err)
		}
		data, err := res[i+1].ToString()
		if err != nil {
			return nil, sp, fmt.Errorf("redis: history entry: %w", err)
		}
		// Decoding copies, so the reply string is read in place.
		p, err := pubconv.Decode(unsafe.Slice(unsafe.StringData(data), len(data)))
		if err != nil {
			return nil, sp, fmt.Errorf("redis: decode history entry %d: %w", offset, err)
		}
		p.Offset = uint64(offset)
		pubs = append(pubs, p)
	}
	return pubs, sp, nil
}

// RemoveHistory drops the channel's stream. The meta stays, so the next
// publish continues the offsets in the same epoch.
func (b *Broker) RemoveHistory(channel string) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	return b.removeHistory(channel)
}

func (b *Broker) removeHistory(channel string) error {
	ci, si := b.e.locate(channel)
	c := b.e.clients[ci]
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.IOTimeout)
	defer cancel()
	if err := c.Do(ctx, c.B().Del().Key(streamKey(b.e.bases[si], channel)).Build()).Error(); err != nil {
		return wrapErr("remove history", err)
	}
	return nil
}
