package redis

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/gyrehq/gyre/broker"
	"github.com/redis/rueidis"
)

// ReadState returns a page of the channel's state in key order
// (lua/map_state.lua), at most Limit entries: a sorted set of the keys
// beside the state hash orders them. The cursor carries the page's last
// key with the channel's epoch and a check of its name; a cursor of
// another epoch is broker.ErrUnrecoverablePosition, like a Revision of
// another epoch.
func (m *MapBroker) ReadState(ctx context.Context, channel string, opts broker.MapStateOptions) (broker.MapStateResult, error) {
	if err := m.checkOpen(); err != nil {
		return broker.MapStateResult{}, err
	}
	from, cursorEpoch := "-", ""
	if opts.Cursor != "" && opts.Key == "" {
		var err error
		if from, cursorEpoch, err = decodeMapCursor(channel, opts.Cursor); err != nil {
			return broker.MapStateResult{}, err
		}
		cursorEpoch = "=" + cursorEpoch
	}
	var revision string
	if opts.Revision != nil {
		revision = "=" + opts.Revision.Epoch
	}
	args := append(m.readArgs(channel, opts.Map), revision, cursorEpoch)
	if opts.Key != "" {
		args = append(args, "k", opts.Key)
	} else {
		args = append(args, "s", from, strconv.Itoa(opts.Limit))
	}
	res, err := m.read(ctx, channel, "read state", mapStateScript, args)
	if err != nil {
		return broker.MapStateResult{}, err
	}
	return parseMapState(channel, res)
}

// readArgs are the first arguments of the read scripts: how to make the
// meta when the channel has none.
func (m *MapBroker) readArgs(channel string, mo broker.MapOptions) []string {
	return []string{newEpoch(), strconv.FormatInt(mapSettings(mo).metaTTL, 10), channel}
}

// read runs a read script on the channel's keys and returns its reply.
func (m *MapBroker) read(ctx context.Context, channel, op string, s *rueidis.Lua, args []string) ([]rueidis.RedisMessage, error) {
	res, err := m.exec(ctx, channel, s, args).ToArray()
	if err != nil {
		return nil, wrapErr("map "+op, err)
	}
	return res, nil
}

// exec runs a script that is safe to run twice (execScript) on the
// channel's keys.
func (m *MapBroker) exec(ctx context.Context, channel string, s *rueidis.Lua, args []string) rueidis.RedisResult {
	ci, si := m.e.locate(channel)
	ctx, cancel := context.WithTimeout(ctx, m.cfg.IOTimeout)
	defer cancel()
	return execScript(ctx, s, m.e.clients[ci], mapKeys(m.e.bases[si], channel), args, true)
}

// parseMapState reads the state script's reply: top, epoch, flag, where
// the next page starts, then keys and entries.
func parseMapState(channel string, res []rueidis.RedisMessage) (broker.MapStateResult, error) {
	var out broker.MapStateResult
	sp, unrecoverable, err := parseMapTop(res)
	if err != nil {
		return out, err
	}
	out.Position = sp
	if unrecoverable {
		return out, broker.ErrUnrecoverablePosition
	}
	if len(res) < 4 || len(res)%2 != 0 {
		return out, fmt.Errorf("redis: map state script returned %d values", len(res))
	}
	next, err := res[3].ToString()
	if err != nil {
		return out, fmt.Errorf("redis: map state cursor: %w", err)
	}
	if next != "" {
		out.Cursor = encodeMapCursor(channel, sp.Epoch, next)
	}
	if out.Entries, err = parseMapEntries(res[4:]); err != nil {
		return out, err
	}
	return out, nil
}

// parseMapTop reads the stream top and the unrecoverable flag that start
// the replies of the read scripts.
func parseMapTop(res []rueidis.RedisMessage) (broker.StreamPosition, bool, error) {
	if len(res) < 3 {
		return broker.StreamPosition{}, false, fmt.Errorf("redis: map read script returned %d values", len(res))
	}
	top, err := res[0].AsInt64()
	if err != nil {
		return broker.StreamPosition{}, false, fmt.Errorf("redis: map read top: %w", err)
	}
	epoch, err := res[1].ToString()
	if err != nil {
		return broker.StreamPosition{}, false, fmt.Errorf("redis: map read epoch: %w", err)
	}
	flag, err := res[2].AsInt64()
	if err != nil {
		return broker.StreamPosition{}, false, fmt.Errorf("redis: map read flag: %w", err)
	}
	return broker.StreamPosition{Offset: uint64(top), Epoch: epoch}, flag == 1, nil
}

// parseMapEntries decodes pairs of key and MapEntry.
func parseMapEntries(res []rueidis.RedisMessage) ([]*broker.Publication, error) {
	if len(res) == 0 {
		return nil, nil
	}
	pubs := make([]*broker.Publication, 0, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		key, err := res[i].ToString()
		if err != nil {
			return nil, fmt.Errorf("redis: map entry key: %w", err)
		}
		data, err := res[i+1].ToString()
		if err != nil {
			return nil, fmt.Errorf("redis: map entry %q: %w", key, err)
		}
		// Decoding copies, so the reply string is read in place.
		p, err := decodeMapEntry(key, unsafe.Slice(unsafe.StringData(data), len(data)))
		if err != nil {
			return nil, err
		}
		pubs = append(pubs, p)
	}
	return pubs, nil
}

// ReadStream returns changes from the channel's stream
// (lua/map_stream.lua), following the rules of Broker.History, except
// that a forward read from a Since whose next change the stream no
// longer holds (trimmed or expired) is broker.ErrUnrecoverablePosition
// too. A mode without a stream returns the position only.
func (m *MapBroker) ReadStream(ctx context.Context, channel string, opts broker.MapStreamOptions) (broker.MapStreamResult, error) {
	if err := m.checkOpen(); err != nil {
		return broker.MapStreamResult{}, err
	}
	f := opts.Filter
	hasSince, sinceOffset, sinceEpoch := "0", "0", ""
	if f.Since != nil {
		hasSince, sinceOffset, sinceEpoch = "1", strconv.FormatUint(f.Since.Offset, 10), f.Since.Epoch
	}
	args := append(m.readArgs(channel, opts.Map), hasSince, sinceOffset, sinceEpoch,
		strconv.Itoa(f.Limit), flag(f.Reverse), flag(opts.Map.Mode.HasStream()))
	res, err := m.read(ctx, channel, "read stream", mapStreamScript, args)
	if err != nil {
		return broker.MapStreamResult{}, err
	}
	sp, unrecoverable, err := parseMapTop(res)
	if err != nil {
		return broker.MapStreamResult{}, err
	}
	if unrecoverable {
		return broker.MapStreamResult{Position: sp}, broker.ErrUnrecoverablePosition
	}
	pubs, err := parseMapEntries(res[3:])
	if err != nil {
		return broker.MapStreamResult{}, err
	}
	return broker.MapStreamResult{Pubs: pubs, Position: sp}, nil
}

// Stats counts the channel's keys (HLEN of the state).
func (m *MapBroker) Stats(ctx context.Context, channel string) (broker.MapStats, error) {
	if err := m.checkOpen(); err != nil {
		return broker.MapStats{}, err
	}
	ci, si := m.e.locate(channel)
	c := m.e.clients[ci]
	ctx, cancel := context.WithTimeout(ctx, m.cfg.IOTimeout)
	defer cancel()
	n, err := c.Do(ctx, c.B().Hlen().Key(m.e.bases[si]+mapStateInfix+channel).Build()).AsInt64()
	if err != nil {
		return broker.MapStats{}, wrapErr("map stats", err)
	}
	return broker.MapStats{NumKeys: int(n)}, nil
}

// Clear drops the channel's meta, state, expiry times and stream
// (lua/map_clear.lua). Idempotency results stay until they expire.
func (m *MapBroker) Clear(ctx context.Context, channel string) error {
	if err := m.checkOpen(); err != nil {
		return err
	}
	if err := m.exec(ctx, channel, mapClearScript, []string{channel}).Error(); err != nil {
		return wrapErr("map clear", err)
	}
	return nil
}

// A state cursor is base64url of "<check>:<epoch>:<from>", check being
// the channel's hash in hex, from where the next page starts ("(" and a
// key, as ZRANGEBYLEX takes it): enough to refuse a cursor of another
// channel, or one that was never handed out. It is no secret: a client
// that forges one only pages its channel from another key.
func encodeMapCursor(channel, epoch, from string) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%x:%s:%s", channelHash(channel), epoch, from))
}

// decodeMapCursor returns where the page of a cursor of channel starts and
// the epoch it was handed out in, or broker.ErrBadCursor.
func decodeMapCursor(channel, cursor string) (from, epoch string, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", "", broker.ErrBadCursor
	}
	parts := strings.SplitN(string(raw), ":", 3)
	if len(parts) != 3 || parts[0] != strconv.FormatUint(channelHash(channel), 16) || parts[1] == "" || !strings.HasPrefix(parts[2], "(") {
		return "", "", broker.ErrBadCursor
	}
	return parts[2], parts[1], nil
}
