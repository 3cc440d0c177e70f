package server

import (
	"fmt"
	"github.com/gyrehq/gyre/broker"
	"log/slog"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/metrics"
)

// useRedisEngine puts the Redis broker, presence manager and map broker
// into ncfg that the config asks for: engine.type redis for the first two,
// then broker and presence_manager, when enabled, for one each, and
// map_broker.type redis for the map broker. It returns the engines it
// opened, to close on shutdown.
func useRedisEngine(c *config.Config, ncfg *gyre.Config, log *slog.Logger, m *metrics.Metrics) ([]*redis.Engine, error) {
	var engines []*redis.Engine
	open := func(path string, r config.Redis, h config.RedisHistory, presenceTTL time.Duration) (*redis.Engine, error) {
		e, err := newRedisEngine(path, r, h, c.Channel.HistoryMetaTTL, presenceTTL, log, m.RedisPubSubErrors())
		if err == nil {
			engines = append(engines, e)
		}
		return e, err
	}
	var engineRedis *redis.Engine
	if c.Engine.Type == "redis" {
		e, err := open("engine.redis", c.Engine.Redis.Redis, c.Engine.Redis.RedisHistory, c.Engine.Redis.PresenceTTL)
		if err != nil {
			return engines, err
		}
		ncfg.Broker, ncfg.PresenceManager = e.Broker(), e.PresenceManager()
		engineRedis = e
	}
	if b := c.Broker; b.Enabled {
		switch b.Type {
		case "redis":
			e, err := open("broker.redis", b.Redis.Redis, b.Redis.RedisHistory, 0)
			if err != nil {
				return engines, err
			}
			ncfg.Broker = e.Broker()
		case "memory":
			ncfg.Broker = nil // the node's own memory broker
		case "nats", "redisnats":
			var store broker.Store
			if b.Type == "redisnats" {
				e, err := open("broker.redis", b.Redis.Redis, b.Redis.RedisHistory, 0)
				if err != nil {
					return engines, err
				}
				store = e.Store()
			}
			nb, err := newNatsBroker(c, store, log)
			if err != nil {
				return engines, err
			}
			ncfg.Broker = nb
		}
	}
	presenceRedis := engineRedis
	if p := c.PresenceManager; p.Enabled {
		switch p.Type {
		case "redis":
			e, err := open("presence_manager.redis", p.Redis.Redis, config.RedisHistory{}, p.Redis.PresenceTTL)
			if err != nil {
				return engines, err
			}
			ncfg.PresenceManager = e.PresenceManager()
			presenceRedis = e
		case "memory":
			ncfg.PresenceManager = nil // the node's own memory presence
			presenceRedis = nil
		}
	}
	if c.EventHooksOn() && presenceRedis != nil {
		// Occupancy is tracked where presence is, with its TTL as the
		// lease of a node's holds.
		tr, err := routedOccupancy(c, func(route string) (broker.OccupancyTracker, error) {
			return redis.NewRouteOccupancyTracker(presenceRedis, route), nil
		})
		if err != nil {
			return engines, err
		}
		ncfg.Occupancy = tr
	}
	if c.MapBrokerType() == "redis" {
		mb, err := newRedisMapBroker(c, engineRedis, log, m)
		if err != nil {
			return engines, err
		}
		ncfg.MapBroker = mb
	}
	return engines, nil
}

// newRedisMapBroker is the redis map broker: on the engine's Redis when
// the config says to share it (config.MapBrokerSharesEngineRedis), else
// on map_broker.redis, with connections of its own.
func newRedisMapBroker(c *config.Config, engineRedis *redis.Engine, log *slog.Logger, m *metrics.Metrics) (*redis.MapBroker, error) {
	if c.MapBrokerSharesEngineRedis() && engineRedis != nil {
		return engineRedis.MapBroker(), nil
	}
	rc, err := redisConfig("map_broker.redis", c.MapBroker.Redis.Redis, config.RedisHistory{}, log, m.RedisPubSubErrors())
	if err != nil {
		return nil, err
	}
	mb, err := redis.NewMapBroker(rc)
	if err != nil {
		return nil, fmt.Errorf("server: map_broker.redis: %w", err)
	}
	return mb, nil
}

// newRedisEngine connects to the Redis that r describes; path names the
// config table in errors. A presenceTTL of 0 keeps the engine's default
// (the engine is then used for its broker only). onPubSubError counts the
// failures of its pub/sub side.
func newRedisEngine(path string, r config.Redis, h config.RedisHistory, historyMetaTTL, presenceTTL time.Duration, log *slog.Logger, onPubSubError func(string)) (*redis.Engine, error) {
	rc, err := redisConfig(path, r, h, log, onPubSubError)
	if err != nil {
		return nil, err
	}
	rc.HistoryMetaTTL, rc.PresenceTTL = historyMetaTTL, presenceTTL
	e, err := redis.New(rc)
	if err != nil {
		return nil, fmt.Errorf("server: %s: %w", path, err)
	}
	return e, nil
}

// redisConfig is the Redis client configuration of the config table at
// path.
func redisConfig(path string, r config.Redis, h config.RedisHistory, log *slog.Logger, onPubSubError func(string)) (redis.Config, error) {
	tlsCfg, err := clientTLS(r.TLS)
	if err != nil {
		return redis.Config{}, fmt.Errorf("server: %s.tls: %w", path, err)
	}
	sentinelTLS, err := clientTLS(r.SentinelTLS)
	if err != nil {
		return redis.Config{}, fmt.Errorf("server: %s.sentinel_tls: %w", path, err)
	}
	return redis.Config{
		Addresses:           r.Address,
		ClusterAddresses:    r.ClusterAddress,
		SentinelAddresses:   r.SentinelAddress,
		SentinelMasterName:  r.SentinelMasterName,
		SentinelUser:        r.SentinelUser,
		SentinelPassword:    r.SentinelPassword,
		SentinelClientName:  r.SentinelClientName,
		SentinelTLS:         sentinelTLS,
		User:                r.User,
		Password:            r.Password,
		DB:                  r.DB,
		ClientName:          r.ClientName,
		TLS:                 tlsCfg,
		ForceRESP2:          r.ForceRESP2,
		Prefix:              r.Prefix,
		ConnectTimeout:      r.ConnectTimeout,
		IOTimeout:           r.IOTimeout,
		DurableRestarts:     h.DurableRestarts,
		SyncReplicas:        h.SyncReplicas,
		SyncReplicasTimeout: h.SyncReplicasTimeout,
		Logger:              log,
		OnPubSubError:       onPubSubError,
	}, nil
}
