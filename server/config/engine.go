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
	Type    string      `key:"type" default:"memory" enum:"memory,redis,nats,redisnats" help:"memory, redis, nats (core NATS for publications; history with broker.nats.jetstream), or redisnats (NATS for publications, broker.redis for history). See docs/engines.md."`
	Redis   RedisBroker `key:"redis" help:"Redis used by the redis broker, and for history by redisnats."`
	Nats    Nats        `key:"nats" help:"NATS used by the nats and redisnats brokers."`
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
	AllowWildcards bool          `key:"allow_wildcards" help:"Let clients subscribe to patterns (* one token, > the rest) in every namespace, as allow_wildcard_subscriptions does for one: each pattern is a NATS subject wildcard, so a node receives only what its patterns match (no presence, join/leave, history or delta for patterns; see docs/wildcards.md)."`
	RawMode        NatsRawMode   `key:"raw_mode" help:"Channels as plain subjects carrying bare data, for systems that publish into NATS themselves."`
	JetStream      NatsJetStream `key:"jetstream" help:"History, recovery and positioning kept in NATS JetStream (Gyre's own key; without it, and outside redisnats, the nats broker has no history)."`
}

// NatsRawMode maps channels to plain NATS subjects.
type NatsRawMode struct {
	Enabled             bool              `key:"enabled" help:"A channel is the subject prefix + channel (after channel_replacements), carrying a publication's bare data both ways: no join/leave, history, tags or client info."`
	Prefix              string            `key:"prefix" help:"Put before every channel to make its subject."`
	ChannelReplacements map[string]string `key:"channel_replacements" help:"Substrings of a channel name replaced in its subject, e.g. {\":\": \".\"}; replaced back for publications received through a pattern."`
}

// NatsJetStream keeps history in JetStream.
type NatsJetStream struct {
	Enabled  bool `key:"enabled" help:"Keep publications of channels with history in JetStream streams (one per history_size and history_ttl pair), with per-channel offsets and epochs: history, recovery and positioning work as on Redis. The NATS server must run with JetStream."`
	Replicas int  `key:"replicas" default:"1" min:"1" max:"5" help:"Replicas of each JetStream stream (a clustered NATS)."`
}

// MapBroker chooses where map channels keep their state and stream.
type MapBroker struct {
	Type     string         `key:"type" enum:",memory,redis,postgres" help:"memory keeps map channels in this process (one node); redis in Redis, shared between nodes. Empty follows the engine: redis (on the engine's Redis) when engine.type is redis, else memory, so that nodes sharing an engine also share their map channels. postgres is Centrifugo's and refused."`
	Redis    MapBrokerRedis `key:"redis" help:"Redis of the redis map broker. With address, cluster_address and sentinel_address left as they are by default and engine.type redis, the map broker uses the engine's Redis (its connections and prefix) and the other keys here are not used."`
	Postgres Unimplemented  `key:"postgres" help:"PostgreSQL map broker." unsupported:"Gyre keeps map channels in memory or in Redis; set map_broker.type memory or redis."`
}

// MapBrokerRedis is the Redis configuration of a redis map broker.
type MapBrokerRedis struct {
	Redis
	CleanupInterval     time.Duration `key:"cleanup_interval" default:"1s" help:"How often expired keys are looked for." unsupported:"Every node looks for expired keys about once a second, each removed once; remove the key."`
	CleanupBatchSize    int           `key:"cleanup_batch_size" default:"100" help:"Expired keys handled per channel and round." unsupported:"Gyre removes every expired key it finds in a round; remove the key."`
	IdempotentResultTTL time.Duration `key:"idempotent_result_ttl" default:"5m" help:"How long the result of an idempotent map write is kept." unsupported:"Gyre keeps idempotent results of map writes for 5 minutes, as for publications; remove the key."`
	SkipPubSub          bool          `key:"skip_pub_sub" help:"Write state without publishing changes." unsupported:"A Gyre map broker always delivers the changes it writes; remove the key."`
}
