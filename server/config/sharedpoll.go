package config

import "time"

// SharedPoll holds what the shared_poll namespaces share: the secret of
// the signatures that let clients track keys, and the bound on calls to
// the backend.
type SharedPoll struct {
	HMACSecretKey                   string `key:"hmac_secret_key" help:"Secret of the track signatures: the backend signs (HMAC-SHA256) the keys of a shared_poll channel a user may track, and clients send the signature with the keys. Required when a namespace has subscription_type shared_poll."`
	HMACPreviousSecretKey           string `key:"hmac_previous_secret_key" help:"The secret hmac_secret_key replaced: its signatures are still accepted during a rotation."`
	HMACPreviousSecretKeyValidUntil int64  `key:"hmac_previous_secret_key_valid_until" help:"Unix time in seconds after which signatures issued (their iat) with hmac_previous_secret_key are refused; 0 accepts them whenever they were issued."`
	ConcurrencyLimit                int    `key:"concurrency_limit" help:"Most calls polling the backend that one node makes at once, over every shared_poll namespace; 0 means 64."`
}

// SharedPollOptions are the options of shared_poll channels, whose keys
// clients track and the server polls from the backend.
type SharedPollOptions struct {
	ProxyName              string        `key:"proxy_name" help:"Proxy that polls the keys: empty or \"default\" (channel.proxy.shared_poll_refresh) or a name from proxies."`
	RefreshInterval        time.Duration `key:"refresh_interval" help:"How often each tracked key is polled; 0 means 10s."`
	RefreshBatchSize       int           `key:"refresh_batch_size" help:"Most keys one call to the backend asks for; 0 means 1000."`
	MaxKeysPerConnection   int           `key:"max_keys_per_connection" help:"Most keys one connection tracks in one channel; 0 means 5000."`
	Mode                   string        `key:"mode" enum:",versionless,versioned" help:"versionless (\"\" too): the server compares the values it polls and numbers the changes itself; versioned: the backend versions its values, and a value reaches clients when its version grows."`
	ChannelShutdownDelay   time.Duration `key:"channel_shutdown_delay" min:"-2562047h" help:"How long a node keeps polling a channel (and its last values) after its last key there is untracked, for clients that come straight back; 0 means 1s, negative stops at once."`
	TrackExpiredExtraDelay time.Duration `key:"track_expired_extra_delay" help:"How long a tracked key outlives the expiry of its signature, for the client to renew it; 0 means 25s."`
	PublishEnabled         bool          `key:"publish_enabled" help:"Allow the shared_poll_publish API method, which sets a key's value without waiting for the next poll (mode versioned only)."`
}
