package config

import "time"

// Engine chooses where PUB/SUB, history and presence live.
type Engine struct {
	Type  string      `key:"type" default:"memory" enum:"memory,redis" help:"memory keeps everything in this process (one node); redis shares it between nodes."`
	Redis RedisEngine `key:"redis" help:"Redis used by the redis engine."`
}

// Broker chooses the PUB/SUB and history backend apart from the engine.
type Broker struct {
	Enabled bool        `key:"enabled" help:"Use this broker instead of the engine's."`
	Type    string      `key:"type" default:"memory" enum:"memory,redis,nats" help:"memory or redis. nats is refused at start: Gyre has no NATS broker yet, and a node running on its own broker would never see other nodes' publications."`
	Redis   RedisBroker `key:"redis" help:"Redis used by the redis broker."`
	Nats    Nats        `key:"nats" help:"NATS used by the nats broker." unsupported:"Gyre has no NATS broker; use broker.type redis (or engine.type redis) for several nodes."`
}

// PresenceManager chooses the presence backend apart from the engine.
type PresenceManager struct {
	Enabled bool          `key:"enabled" help:"Use this presence manager instead of the engine's."`
	Type    string        `key:"type" default:"memory" enum:"memory,redis" help:"memory or redis."`
	Redis   RedisPresence `key:"redis" help:"Redis used by the redis presence manager."`
}

// Redis says how to reach Redis: one or more standalone addresses (sharded
// between them), a cluster, or sentinels.
type Redis struct {
	Address            []string      `key:"address" default:"redis://127.0.0.1:6379" help:"Redis addresses, host:port or redis://[user:password@]host:port[/db]; several shard channels between them. A single string is accepted."`
	Prefix             string        `key:"prefix" default:"gyre" help:"Prefix of every Redis key and PUB/SUB channel, so several setups can share one Redis."`
	ConnectTimeout     time.Duration `key:"connect_timeout" default:"1s" min:"1ns" help:"Longest a connection attempt may take."`
	IOTimeout          time.Duration `key:"io_timeout" default:"4s" min:"1ns" help:"Longest a Redis command may take."`
	DB                 int           `key:"db" help:"Redis database number."`
	User               string        `key:"user" help:"User for Redis ACL authentication."`
	Password           string        `key:"password" help:"Redis password."`
	ClientName         string        `key:"client_name" help:"Connection name shown by CLIENT LIST."`
	ForceRESP2         bool          `key:"force_resp2" help:"Speak RESP2 even to servers that support RESP3."`
	ClusterAddress     []string      `key:"cluster_address" help:"Seed addresses of a Redis Cluster; when set, address is not used."`
	SentinelAddress    []string      `key:"sentinel_address" help:"Addresses of Redis Sentinels; when set, address is not used and sentinel_master_name is required."`
	SentinelUser       string        `key:"sentinel_user" help:"User for Sentinel authentication."`
	SentinelPassword   string        `key:"sentinel_password" help:"Password for Sentinel authentication."`
	SentinelMasterName string        `key:"sentinel_master_name" help:"Name of the master the Sentinels watch."`
	SentinelClientName string        `key:"sentinel_client_name" help:"Connection name used towards Sentinels."`
	TLS                TLS           `key:"tls" help:"TLS towards Redis."`
	SentinelTLS        TLS           `key:"sentinel_tls" help:"TLS towards Sentinels."`
}

// RedisHistory holds the history options of a Redis broker.
type RedisHistory struct {
	HistoryUseLists     bool          `key:"history_use_lists" help:"Keep history in Redis lists instead of streams (no idempotent publish, no reverse order, no paging)." unsupported:"Gyre keeps Redis history in streams only; remove the key (history in streams offers everything lists do)."`
	DurableRestarts     bool          `key:"durable_restarts" help:"The Redis servers sync every write to disk before acknowledging it (appendonly yes, appendfsync always), so a restart loses nothing: streams keep their epoch, and clients their recovery, across a Redis restart. Off, streams start a new epoch after a restart (a snapshot or an AOF synced every second may lack the last publications). A promoted replica starts new epochs either way."`
	SyncReplicas        int           `key:"sync_replicas" min:"0" help:"Acknowledge a publish only once this many replicas have it (Redis WAIT), so that it survives a failover; a publish Redis ran that fewer replicas took within sync_replicas_timeout fails as not available. 0: asynchronous replication, a failover may lose the last publications (their streams start a new epoch)."`
	SyncReplicasTimeout time.Duration `key:"sync_replicas_timeout" default:"1s" min:"1ns" help:"How long a publish waits for sync_replicas replicas."`
}

// RedisPresenceOptions holds the presence options of a Redis presence manager.
type RedisPresenceOptions struct {
	PresenceTTL          time.Duration `key:"presence_ttl" default:"60s" min:"1ns" help:"How long a presence entry lives without being refreshed."`
	PresenceHashFieldTTL bool          `key:"presence_hash_field_ttl" help:"Expire presence entries per hash field (Redis 7.4 and later)." unsupported:"Gyre expires presence entries through a sorted set, which works on every Redis version; remove the key."`
	PresenceUserMapping  bool          `key:"presence_user_mapping" help:"Keep a separate user count so presence_stats is cheap on large channels." unsupported:"Gyre counts users for presence_stats from the presence set itself; remove the key."`
}

// RedisEngine is the Redis configuration of the redis engine.
type RedisEngine struct {
	Redis
	RedisHistory
	RedisPresenceOptions
}

// RedisBroker is the Redis configuration of a redis broker.
type RedisBroker struct {
	Redis
	RedisHistory
}

// RedisPresence is the Redis configuration of a redis presence manager.
type RedisPresence struct {
	Redis
	RedisPresenceOptions
}

// Nats says how to reach NATS.
type Nats struct {
	URL            string        `key:"url" default:"nats://localhost:4222" help:"NATS server URL."`
	Prefix         string        `key:"prefix" default:"gyre" help:"Prefix of every NATS subject, so several setups can share one NATS."`
	DialTimeout    time.Duration `key:"dial_timeout" default:"1s" min:"1ns" help:"Longest a connection attempt may take."`
	WriteTimeout   time.Duration `key:"write_timeout" default:"1s" min:"1ns" help:"Longest a write to NATS may take."`
	TLS            TLS           `key:"tls" help:"TLS towards NATS."`
	AllowWildcards bool          `key:"allow_wildcards" help:"Let clients subscribe with NATS wildcards (no presence or join/leave for them)."`
	RawMode        Unimplemented `key:"raw_mode" help:"Raw NATS subjects without Gyre's prefix and envelope." unsupported:"Gyre has no NATS broker; use engine.type redis."`
}
