package redisstream

import (
	"context"
	"time"

	"github.com/redis/rueidis"
)

// pollLag asks Redis for the lag of the group on each of streams every
// lagEvery until ctx ends.
func (c *Consumer) pollLag(ctx context.Context, client rueidis.Client, streams []*stream) {
	t := time.NewTicker(lagEvery)
	defer t.Stop()
	for {
		for _, s := range streams {
			s.lag.Store(c.groupLag(client, s))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// groupLag is the number of entries of s that the group has not
// acknowledged: those not delivered yet (XINFO GROUPS lag) and those
// pending; -1 when Redis cannot tell. It records the group's last
// delivered entry on the way.
func (c *Consumer) groupLag(client rueidis.Client, s *stream) int64 {
	ctx, cancel := c.timeout()
	defer cancel()
	groups, err := client.Do(ctx, client.B().XinfoGroups().Key(s.key).Build()).ToArray()
	if err != nil {
		return -1
	}
	for _, g := range groups {
		info, err := g.AsMap()
		if err != nil {
			return -1
		}
		name, last, pending, lag := info["name"], info["last-delivered-id"], info["pending"], info["lag"]
		if n, _ := name.ToString(); n != c.cfg.ConsumerGroup {
			continue
		}
		if last, err := last.ToString(); err == nil {
			s.delivered(last)
		}
		p, err := pending.AsInt64()
		if err != nil {
			return -1
		}
		l, err := lag.AsInt64()
		if err != nil {
			// Missing (Redis 6) or nil: Redis cannot tell.
			return -1
		}
		return l + p
	}
	return -1
}

// leave deletes the consumers names of the group on s that hold no
// pending entry, once their readers stopped, so that the group does not
// keep a consumer per start of every node. Failing is harmless.
func (c *Consumer) leave(client rueidis.Client, s *stream, names []string) {
	ctx, cancel := c.timeout()
	defer cancel()
	args := append([]string{c.cfg.ConsumerGroup}, names...)
	if err := leaveScript.Exec(ctx, client, []string{s.key}, args).Error(); err != nil {
		c.d.Logger().Debug("could not leave the consumer group", "stream", s.what, "error", err)
	}
}

// leaveScript deletes the consumers ARGV[2..] of group ARGV[1] on stream
// KEYS[1] that hold no pending entry (a consumer deleted with pending
// entries would leave them to nobody).
var leaveScript = rueidis.NewLuaScript(`
for i = 2, #ARGV do
  if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[i]) == 0 then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[i])
  end
end
return 0
`)
