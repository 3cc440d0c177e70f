// Package redisstream consumes Redis streams. (Being built.)
package redisstream

import (
	"errors"

	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
)

// New makes the consumer of cfg, reaching Redis as rc says.
func New(cfg config.RedisStreamConsumer, rc redis.Config, d *consume.Dispatcher) (consume.Consumer, error) {
	return nil, errors.New("redisstream: not built yet")
}
