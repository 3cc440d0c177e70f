package redis

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/pubconv"
	"github.com/redis/rueidis"
)

// PresenceManager is a broker.PresenceManager keeping presence in Redis,
// shared by every Gyre node. Its methods are safe for concurrent use.
//
// Each channel has a hash of entries and a sorted set of their expiry
// times (Redis before 7.4 cannot expire hash fields), plus a hash of users
// and their client counts, so PresenceStats costs two HLENs however large
// the channel. The scripts in lua/presence_*.lua drop expired entries
// before anything else, and every key expires PresenceTTL after the last
// AddPresence of the channel.
type PresenceManager struct {
	e      *Engine
	closed atomic.Bool
}

var (
	_ broker.PresenceManager = (*PresenceManager)(nil)
	_ broker.HealthChecker   = (*PresenceManager)(nil)
)

func (m *PresenceManager) target(channel string) (rueidis.Client, []string) {
	ci, si := m.e.locate(channel)
	return m.e.clients[ci], presenceKeys(m.e.bases[si], channel)
}

func (m *PresenceManager) exec(op string, s *rueidis.Lua, channel string, args ...string) (rueidis.RedisResult, error) {
	if m.closed.Load() {
		return rueidis.RedisResult{}, ErrClosed
	}
	c, keys := m.target(channel)
	ctx, cancel := context.WithTimeout(context.Background(), m.e.cfg.IOTimeout)
	defer cancel()
	res := execScript(ctx, s, c, keys, args, true)
	if err := res.Error(); err != nil {
		return res, wrapErr(op, err)
	}
	return res, nil
}

// Presence returns the channel's live entries by client ID.
func (m *PresenceManager) Presence(channel string) (map[string]*broker.ClientInfo, error) {
	res, err := m.exec("presence", presenceGetScript, channel, "list")
	if err != nil {
		return nil, err
	}
	arr, err := res.ToArray()
	if err != nil || len(arr)%2 != 0 {
		return nil, fmt.Errorf("redis: presence script returned %d values: %v", len(arr), err)
	}
	out := make(map[string]*broker.ClientInfo, len(arr)/2)
	for i := 0; i < len(arr); i += 2 {
		client, err1 := arr[i].ToString()
		data, err2 := arr[i+1].ToString()
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("redis: presence entry: %v %v", err1, err2)
		}
		info, err := decodeInfo(unsafe.Slice(unsafe.StringData(data), len(data)))
		if err != nil {
			return nil, fmt.Errorf("redis: decode presence entry of %q: %w", client, err)
		}
		out[client] = info
	}
	return out, nil
}

// PresenceStats counts the channel's live entries and distinct users.
func (m *PresenceManager) PresenceStats(channel string) (broker.PresenceStats, error) {
	res, err := m.exec("presence stats", presenceGetScript, channel, "stats")
	if err != nil {
		return broker.PresenceStats{}, err
	}
	arr, err := res.AsIntSlice()
	if err != nil || len(arr) != 2 {
		return broker.PresenceStats{}, fmt.Errorf("redis: presence stats script returned %v: %v", arr, err)
	}
	return broker.PresenceStats{NumClients: int(arr[0]), NumUsers: int(arr[1])}, nil
}

// AddPresence adds or refreshes the client's entry for Config.PresenceTTL.
func (m *PresenceManager) AddPresence(channel, clientID string, info *broker.ClientInfo) error {
	if info == nil {
		info = &broker.ClientInfo{ClientID: clientID}
	}
	data, err := pubconv.ToProtoInfo(info).MarshalVT()
	if err != nil {
		return fmt.Errorf("redis: encode presence info: %w", err)
	}
	ttl := strconv.FormatInt(millis(m.e.cfg.PresenceTTL), 10)
	_, err = m.exec("add presence", presenceAddScript, channel, clientID, rueidis.BinaryString(data), info.UserID, ttl)
	return err
}

// RemovePresence drops the client's entry; an absent one is no error.
func (m *PresenceManager) RemovePresence(channel, clientID, userID string) error {
	_, err := m.exec("remove presence", presenceRemoveScript, channel, clientID)
	return err
}

// Healthy pings every Redis the manager uses and returns an error wrapping
// broker.ErrNotAvailable if one does not answer within Config.IOTimeout.
func (m *PresenceManager) Healthy() error {
	if m.closed.Load() {
		return ErrClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.e.cfg.IOTimeout)
	defer cancel()
	for _, c := range m.e.clients {
		if err := c.Do(ctx, c.B().Ping().Build()).Error(); err != nil {
			return wrapErr("ping", err)
		}
	}
	return nil
}

// Close marks the manager closed; the connections close with the Engine
// (or when the Broker is closed too). Later calls return nil.
func (m *PresenceManager) Close() error {
	if m.closed.CompareAndSwap(false, true) {
		m.e.release()
	}
	return nil
}
