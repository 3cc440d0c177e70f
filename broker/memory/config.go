package memory

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults used for zero Config and PresenceConfig fields.
const (
	DefaultHistoryMetaTTL      = 30 * 24 * time.Hour
	DefaultIdempotentResultTTL = 5 * time.Minute
	DefaultSweepInterval       = time.Second
	DefaultSweepBatch          = 4096
	DefaultShards              = 64
	DefaultPresenceTTL         = 60 * time.Second
	DefaultPresenceSweep       = 5 * time.Second
	DefaultMapSweepInterval    = 250 * time.Millisecond
	DefaultMapIdleTTL          = time.Hour
)

// Config configures a Broker. The zero value works.
type Config struct {
	// HistoryMetaTTL is how long a stream's offset and epoch outlive its
	// last publish or History call when the call itself gives no TTL.
	// Zero means 30 days.
	HistoryMetaTTL time.Duration
	// IdempotentResultTTL is how long an idempotency key is remembered
	// when PublishOptions.IdempotentResultTTL is zero. Zero means 5 minutes.
	IdempotentResultTTL time.Duration
	// SweepInterval is the period of the background sweep that frees the
	// expired state of idle channels. Zero means 1 second.
	SweepInterval time.Duration
	// SweepBatch is the most channels one sweep tick examines. Zero means
	// 4096.
	SweepBatch int
	// Shards is the number of independently locked parts of the channel
	// map. Zero means 64.
	Shards int
	// Logger receives errors returned by the EventHandler, which Publish
	// does not return (the publication is already stored). Nil discards.
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if err := nonNegative("Config.HistoryMetaTTL", c.HistoryMetaTTL); err != nil {
		return c, err
	}
	if err := nonNegative("Config.IdempotentResultTTL", c.IdempotentResultTTL); err != nil {
		return c, err
	}
	if err := nonNegative("Config.SweepInterval", c.SweepInterval); err != nil {
		return c, err
	}
	if c.SweepBatch < 0 {
		return c, fmt.Errorf("memory: Config.SweepBatch %d is negative", c.SweepBatch)
	}
	if c.Shards < 0 {
		return c, fmt.Errorf("memory: Config.Shards %d is negative", c.Shards)
	}
	c.HistoryMetaTTL = orDefault(c.HistoryMetaTTL, DefaultHistoryMetaTTL)
	c.IdempotentResultTTL = orDefault(c.IdempotentResultTTL, DefaultIdempotentResultTTL)
	c.SweepInterval = orDefault(c.SweepInterval, DefaultSweepInterval)
	c.SweepBatch = orDefault(c.SweepBatch, DefaultSweepBatch)
	c.Shards = orDefault(c.Shards, DefaultShards)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// PresenceConfig configures a PresenceManager. The zero value works.
type PresenceConfig struct {
	// TTL is how long an entry stays without being refreshed by another
	// AddPresence. Zero means 60 seconds.
	TTL time.Duration
	// SweepInterval is the period of the background sweep that frees
	// expired entries. Zero means 5 seconds.
	SweepInterval time.Duration
	// SweepBatch is the most channels one sweep tick examines. Zero means
	// 4096.
	SweepBatch int
	// Shards is the number of independently locked parts of the channel
	// map. Zero means 64.
	Shards int
}

func (c PresenceConfig) withDefaults() (PresenceConfig, error) {
	if err := nonNegative("PresenceConfig.TTL", c.TTL); err != nil {
		return c, err
	}
	if err := nonNegative("PresenceConfig.SweepInterval", c.SweepInterval); err != nil {
		return c, err
	}
	if c.SweepBatch < 0 {
		return c, fmt.Errorf("memory: PresenceConfig.SweepBatch %d is negative", c.SweepBatch)
	}
	if c.Shards < 0 {
		return c, fmt.Errorf("memory: PresenceConfig.Shards %d is negative", c.Shards)
	}
	c.TTL = orDefault(c.TTL, DefaultPresenceTTL)
	c.SweepInterval = orDefault(c.SweepInterval, DefaultPresenceSweep)
	c.SweepBatch = orDefault(c.SweepBatch, DefaultSweepBatch)
	c.Shards = orDefault(c.Shards, DefaultShards)
	return c, nil
}

// MapConfig configures a MapBroker. The zero value works.
type MapConfig struct {
	// IdempotentResultTTL is how long an idempotency key is remembered
	// when the call gives no TTL. Zero means 5 minutes.
	IdempotentResultTTL time.Duration
	// SweepInterval is the period of the background sweep that removes
	// expired keys, each as a change, and frees idle channels: a key is
	// removed at most about this long after its TTL. Zero means 250
	// milliseconds.
	SweepInterval time.Duration
	// SweepBatch is the most channels one sweep tick examines for
	// idleness; expired keys are all removed at every tick whatever
	// their number. Zero means 4096.
	SweepBatch int
	// Shards is the number of independently locked parts of the channel
	// map. Zero means 64.
	Shards int
	// IdleTTL is how long a channel is kept once it holds nothing (no
	// keys, no stream, no idempotency results) and this node is not
	// subscribed to it, counted from the last call about it. Its epoch
	// goes with it. Zero means 1 hour.
	IdleTTL time.Duration
	// Logger receives errors returned by the RunHandler, which Publish
	// does not return (the change is already made). Nil discards.
	Logger *slog.Logger
}

func (c MapConfig) withDefaults() (MapConfig, error) {
	for _, d := range []struct {
		field string
		d     time.Duration
	}{{"IdempotentResultTTL", c.IdempotentResultTTL}, {"SweepInterval", c.SweepInterval}, {"IdleTTL", c.IdleTTL}} {
		if err := nonNegative("MapConfig."+d.field, d.d); err != nil {
			return c, err
		}
	}
	if c.SweepBatch < 0 {
		return c, fmt.Errorf("memory: MapConfig.SweepBatch %d is negative", c.SweepBatch)
	}
	if c.Shards < 0 {
		return c, fmt.Errorf("memory: MapConfig.Shards %d is negative", c.Shards)
	}
	c.IdempotentResultTTL = orDefault(c.IdempotentResultTTL, DefaultIdempotentResultTTL)
	c.SweepInterval = orDefault(c.SweepInterval, DefaultMapSweepInterval)
	c.SweepBatch = orDefault(c.SweepBatch, DefaultSweepBatch)
	c.Shards = orDefault(c.Shards, DefaultShards)
	c.IdleTTL = orDefault(c.IdleTTL, DefaultMapIdleTTL)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

func nonNegative(field string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("memory: %s %v is negative", field, d)
	}
	return nil
}

func orDefault[T time.Duration | int](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// sweepBudget splits a tick's channel budget across shards, at least one
// channel each so that every shard makes progress.
func sweepBudget(batch, shards int) int {
	return max(1, (batch+shards-1)/shards)
}
