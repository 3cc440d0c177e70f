package server

import (
	"fmt"
	"log/slog"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/server/config"
)

// useRedisEngine puts a Redis broker and presence manager into ncfg when
// the config asks for engine.type redis. It returns the engine to close on
// shutdown, or nil.
func useRedisEngine(c *config.Config, ncfg *gyre.Config, log *slog.Logger) (*redis.Engine, error) {
	if c.Engine.Type != "redis" {
		return nil, nil
	}
	r := c.Engine.Redis
	tlsCfg, err := clientTLS(r.TLS)
	if err != nil {
		return nil, fmt.Errorf("server: engine.redis.tls: %w", err)
	}
	sentinelTLS, err := clientTLS(r.SentinelTLS)
	if err != nil {
		return nil, fmt.Errorf("server: engine.redis.sentinel_tls: %w", err)
	}
	// history_use_lists and presence_hash_field_ttl are reported by the
	// config (they are tagged unsupported there).
	e, err := redis.New(redis.Config{
		Addresses:          r.Address,
		ClusterAddresses:   r.ClusterAddress,
		SentinelAddresses:  r.SentinelAddress,
		SentinelMasterName: r.SentinelMasterName,
		SentinelUser:       r.SentinelUser,
		SentinelPassword:   r.SentinelPassword,
		SentinelClientName: r.SentinelClientName,
		SentinelTLS:        sentinelTLS,
		User:               r.User,
		Password:           r.Password,
		DB:                 r.DB,
		ClientName:         r.ClientName,
		TLS:                tlsCfg,
		ForceRESP2:         r.ForceRESP2,
		Prefix:             r.Prefix,
		ConnectTimeout:     r.ConnectTimeout,
		IOTimeout:          r.IOTimeout,
		HistoryMetaTTL:     c.Channel.HistoryMetaTTL,
		PresenceTTL:        r.PresenceTTL,
		Logger:             log,
	})
	if err != nil {
		return nil, fmt.Errorf("server: redis engine: %w", err)
	}
	ncfg.Broker = e.Broker()
	ncfg.PresenceManager = e.PresenceManager()
	return e, nil
}
