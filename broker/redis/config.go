package redis

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Defaults used for zero Config fields.
const (
	DefaultAddress             = "127.0.0.1:6379"
	DefaultPrefix              = "gyre"
	DefaultConnectTimeout      = time.Second
	DefaultIOTimeout           = 4 * time.Second
	DefaultHistoryMetaTTL      = 30 * 24 * time.Hour
	DefaultIdempotentResultTTL = 5 * time.Minute
	DefaultPresenceTTL         = 60 * time.Second
	DefaultPubSubShards        = 1
	DefaultClusterShards       = 16
	DefaultSyncReplicasTimeout = time.Second
)

// Config says how to reach Redis and how to keep data there. The zero value
// works against a Redis on 127.0.0.1:6379. Exactly one of Addresses,
// ClusterAddresses and SentinelAddresses is used, in reverse order of
// precedence: sentinels win over a cluster, a cluster over addresses.
type Config struct {
	// Addresses of standalone Redis servers, host:port or
	// redis://[user:password@]host:port[/db] (rediss:// for TLS). With
	// several, channels are spread between them by consistent hashing of
	// the channel name; every node of a Gyre cluster must list the same
	// addresses in the same order. Empty means 127.0.0.1:6379.
	Addresses []string
	// ClusterAddresses are seed addresses of a Redis Cluster.
	ClusterAddresses []string
	// SentinelAddresses are addresses of Sentinels watching the master
	// named SentinelMasterName, which is then required.
	SentinelAddresses  []string
	SentinelMasterName string
	SentinelUser       string
	SentinelPassword   string
	SentinelClientName string
	// SentinelTLS, when set, is used towards the Sentinels.
	SentinelTLS *tls.Config

	// User and Password authenticate with Redis (ACL user, or password
	// only). A redis:// address may override them.
	User     string
	Password string
	// DB is the database number of standalone and Sentinel setups.
	DB int
	// ClientName is shown by CLIENT LIST. Empty sets none.
	ClientName string
	// TLS, when set, is used towards Redis.
	TLS *tls.Config
	// ForceRESP2 speaks RESP2 even to servers that support RESP3.
	ForceRESP2 bool

	// Prefix starts every key and pub/sub channel name, so several setups
	// can share one Redis. It must not contain '{' or '}'. Empty means
	// "gyre".
	Prefix string
	// ConnectTimeout bounds a connection attempt. Zero means 1 second.
	ConnectTimeout time.Duration
	// IOTimeout bounds every Redis command, so that a hung or unreachable
	// Redis makes calls fail instead of waiting. Zero means 4 seconds.
	IOTimeout time.Duration

	// HistoryMetaTTL is how long a stream's offset and epoch outlive its
	// last publish or History call when the call gives no TTL. Zero means
	// 30 days.
	HistoryMetaTTL time.Duration
	// IdempotentResultTTL is how long an idempotency key is remembered
	// when PublishOptions.IdempotentResultTTL is zero. Zero means 5
	// minutes.
	IdempotentResultTTL time.Duration
	// PresenceTTL is how long a presence entry lives without another
	// AddPresence. Zero means 60 seconds.
	PresenceTTL time.Duration

	// PubSubShards is the number of pub/sub connections to each standalone
	// or Sentinel-watched Redis; channels are spread between them by hash.
	// Zero means 1.
	PubSubShards int
	// ClusterShards is the number of parts a Redis Cluster setup splits
	// channels into. Each part is a hash tag, so all keys and the sharded
	// pub/sub channel of one channel live in one slot, and has its own
	// pub/sub connection. Every Gyre node must use the same number. Zero
	// means 16.
	ClusterShards int

	// DurableRestarts tells that the Redis servers sync every write to
	// disk before acknowledging it (appendonly yes, appendfsync always),
	// so that a restart loses nothing: streams then keep their epoch, and
	// clients their recovery, across a restart. False, a stream found
	// after a restart starts a new epoch, since a snapshot or an AOF
	// synced every second may lack the last acknowledged publications. A
	// promoted replica starts new epochs either way.
	DurableRestarts bool

	// SyncReplicas, when above zero, makes every publish pipeline wait
	// (Redis WAIT) until that many replicas have its writes, so that an
	// acknowledged publication survives a failover: one that Redis ran
	// but fewer replicas acknowledged within SyncReplicasTimeout fails
	// with an error wrapping broker.ErrNotAvailable. It costs a
	// replication round trip per pipeline and a dedicated connection
	// while it waits. Zero: Redis replicates asynchronously and a
	// failover may lose the last acknowledged publications (their
	// streams then start a new epoch; see lua/stream_common.lua).
	SyncReplicas int
	// SyncReplicasTimeout bounds the wait for replicas. Zero means 1
	// second.
	SyncReplicasTimeout time.Duration

	// Logger receives connection losses and errors returned by the
	// EventHandler. Nil discards.
	Logger *slog.Logger
	// OnPubSubError, when set, is told about every failure of the pub/sub
	// side, for metrics, by kind: "connection" (a pub/sub connection lost,
	// or an attempt to bring one back failed), "subscribe_channel" and
	// "subscribe_shard_channel" (SUBSCRIBE, or SSUBSCRIBE in a cluster,
	// refused or timed out), "handle_client_message" and
	// "handle_control_message" (a message that could not be decoded, or
	// that the EventHandler failed on). It must not block.
	OnPubSubError func(kind string)
}

// mode is how the engine reaches Redis.
type mode int

const (
	modeStandalone mode = iota
	modeCluster
	modeSentinel
)

func (c Config) mode() mode {
	switch {
	case len(c.SentinelAddresses) > 0:
		return modeSentinel
	case len(c.ClusterAddresses) > 0:
		return modeCluster
	default:
		return modeStandalone
	}
}

func (c Config) withDefaults() (Config, error) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"ConnectTimeout", c.ConnectTimeout},
		{"IOTimeout", c.IOTimeout},
		{"HistoryMetaTTL", c.HistoryMetaTTL},
		{"IdempotentResultTTL", c.IdempotentResultTTL},
		{"PresenceTTL", c.PresenceTTL},
		{"SyncReplicasTimeout", c.SyncReplicasTimeout},
	} {
		if d.v < 0 {
			return c, fmt.Errorf("redis: Config.%s %v is negative", d.name, d.v)
		}
	}
	if c.PubSubShards < 0 {
		return c, fmt.Errorf("redis: Config.PubSubShards %d is negative", c.PubSubShards)
	}
	if c.SyncReplicas < 0 {
		return c, fmt.Errorf("redis: Config.SyncReplicas %d is negative", c.SyncReplicas)
	}
	if c.ClusterShards < 0 {
		return c, fmt.Errorf("redis: Config.ClusterShards %d is negative", c.ClusterShards)
	}
	if strings.ContainsAny(c.Prefix, "{}") {
		return c, fmt.Errorf("redis: Config.Prefix %q contains a brace, which would break cluster hash tags", c.Prefix)
	}
	if c.mode() == modeSentinel && c.SentinelMasterName == "" {
		return c, fmt.Errorf("redis: Config.SentinelMasterName is required with SentinelAddresses")
	}
	if len(c.Addresses) == 0 {
		c.Addresses = []string{DefaultAddress}
	}
	c.Prefix = orDefault(c.Prefix, DefaultPrefix)
	c.ConnectTimeout = orDefault(c.ConnectTimeout, DefaultConnectTimeout)
	c.IOTimeout = orDefault(c.IOTimeout, DefaultIOTimeout)
	c.HistoryMetaTTL = orDefault(c.HistoryMetaTTL, DefaultHistoryMetaTTL)
	c.IdempotentResultTTL = orDefault(c.IdempotentResultTTL, DefaultIdempotentResultTTL)
	c.PresenceTTL = orDefault(c.PresenceTTL, DefaultPresenceTTL)
	c.PubSubShards = orDefault(c.PubSubShards, DefaultPubSubShards)
	c.ClusterShards = orDefault(c.ClusterShards, DefaultClusterShards)
	c.SyncReplicasTimeout = orDefault(c.SyncReplicasTimeout, DefaultSyncReplicasTimeout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

func orDefault[T time.Duration | int | string](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
