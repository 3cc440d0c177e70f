package redis

import (
	"context"
	"errors"
	"fmt"

	"github.com/gyrehq/gyre/broker"
	"github.com/redis/rueidis"
)

// ErrClosed is returned by every method of a closed Broker,
// PresenceManager or Store except Close.
var ErrClosed = errors.New("redis: closed")

// wrapErr adds context to an error from Redis. Errors that say Redis
// cannot serve right now (connection refused or lost, timeouts, a loading,
// read-only or failing-over server, a cluster without a quorum) also wrap
// broker.ErrNotAvailable, so the engine reports them as temporary.
func wrapErr(op string, err error) error {
	if unavailable(err) {
		return fmt.Errorf("redis: %s: %w: %w", op, broker.ErrNotAvailable, err)
	}
	return fmt.Errorf("redis: %s: %w", op, err)
}

func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, rueidis.ErrClosing) {
		return true
	}
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		// Not a reply from Redis: the network or the client failed.
		return true
	}
	if re.IsLoading() || re.IsClusterDown() || re.IsTryAgain() {
		return true
	}
	if _, moved := re.IsRedirect(); moved {
		return true
	}
	switch prefix(re.Error()) {
	case "READONLY", "MASTERDOWN", "NOREPLICAS", "BUSY":
		return true
	}
	return false
}

// prefix returns the error code of a Redis error reply, its first word.
func prefix(msg string) string {
	for i := 0; i < len(msg); i++ {
		if msg[i] == ' ' {
			return msg[:i]
		}
	}
	return msg
}

// execScript runs a script once, or twice when safe says running it again
// does no harm and the first attempt failed on the connection. A
// connection that broke while idle (Redis restarted) fails the first
// command sent on it; the retry goes out on a new one. Unsafe scripts (a
// publish without an idempotency key) are never retried: the first
// attempt may have run.
func execScript(ctx context.Context, s *rueidis.Lua, c rueidis.Client, keys, args []string, safe bool) rueidis.RedisResult {
	res := s.Exec(ctx, c, keys, args)
	if !safe || ctx.Err() != nil {
		return res
	}
	if err := res.Error(); err != nil {
		if _, isReply := rueidis.IsRedisErr(err); !isReply {
			return s.Exec(ctx, c, keys, args)
		}
	}
	return res
}
