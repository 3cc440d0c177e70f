package redis

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/protocol"
	"github.com/redis/rueidis"
)

// Publish runs the publish script (lua/publish.lua) in the channel's
// Redis: idempotency check, offset, history append, delta base and pub/sub
// message happen atomically. Delivery to this node's handler comes back
// through pub/sub like everyone else's. With opts.PatternScope the script
// also sends the publication to the scope's pub/sub channel (patterns.go).
func (b *Broker) Publish(channel string, data []byte, opts broker.PublishOptions) (broker.StreamPosition, bool, error) {
	if err := b.checkOpen(); err != nil {
		return broker.StreamPosition{}, false, err
	}
	// Encoding copies data, tags and info, so the caller may reuse them.
	pub, err := (&protocol.Publication{
		Data: data,
		Info: toProtoInfo(opts.ClientInfo),
		Tags: opts.Tags,
		Time: time.Now().UnixMilli(),
	}).MarshalVT()
	if err != nil {
		return broker.StreamPosition{}, false, fmt.Errorf("redis: encode publication: %w", err)
	}
	ci, si := b.e.locate(channel)
	base := b.e.bases[si]
	meta := metaKey(base, channel)
	keys := []string{streamKey(base, channel), meta, meta}

	var size, ttl int64
	var epoch string
	if opts.HistorySize > 0 && opts.HistoryTTL > 0 {
		size, ttl = int64(opts.HistorySize), millis(opts.HistoryTTL)
		epoch = newEpoch()
	}
	var idemTTL int64
	if opts.IdempotencyKey != "" {
		keys[2] = idemKey(base, channel, opts.IdempotencyKey)
		idemTTL = millis(orDefault(opts.IdempotentResultTTL, b.cfg.IdempotentResultTTL))
	}
	delta := "0"
	if opts.UseDelta {
		delta = "1"
	}
	var scopeName, scopeChannel string
	if opts.PatternScope != "" {
		scopeName, scopeChannel = b.scopeName(opts.PatternScope), channel
	}
	args := []string{
		base + pubsubInfix + channel,
		rueidis.BinaryString(pub),
		strconv.FormatInt(size, 10),
		strconv.FormatInt(ttl, 10),
		strconv.FormatInt(millis(orDefault(opts.HistoryMetaTTL, b.cfg.HistoryMetaTTL)), 10),
		epoch,
		delta,
		strconv.FormatInt(idemTTL, 10),
		b.e.publishCommand(),
		scopeName,
		scopeChannel,
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.IOTimeout)
	defer cancel()
	res, err := execScript(ctx, publishScript, b.e.clients[ci], keys, args, opts.IdempotencyKey != "").ToArray()
	if err != nil {
		return broker.StreamPosition{}, false, wrapErr("publish", err)
	}
	return parsePublishResult(res)
}

func parsePublishResult(res []rueidis.RedisMessage) (broker.StreamPosition, bool, error) {
	if len(res) != 3 {
		return broker.StreamPosition{}, false, fmt.Errorf("redis: publish script returned %d values, want 3", len(res))
	}
	offset, err := res[0].AsInt64()
	if err != nil {
		return broker.StreamPosition{}, false, fmt.Errorf("redis: publish script offset: %w", err)
	}
	epoch, err := res[1].ToString()
	if err != nil {
		return broker.StreamPosition{}, false, fmt.Errorf("redis: publish script epoch: %w", err)
	}
	suppressed, err := res[2].AsInt64()
	if err != nil {
		return broker.StreamPosition{}, false, fmt.Errorf("redis: publish script flag: %w", err)
	}
	return broker.StreamPosition{Offset: uint64(offset), Epoch: epoch}, suppressed == 1, nil
}

// millis rounds a positive duration up to whole milliseconds, so that a
// sub-millisecond TTL does not become zero (no expiry, or an error).
func millis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// newEpoch returns a short random stream epoch, used by a script only when
// it creates the stream. Six random bytes make eight characters.
func newEpoch() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b[:])
}
