package config

import "time"

// Client configures real-time client connections.
type Client struct {
	AllowedOrigins                    []string                       `key:"allowed_origins" help:"Origins allowed to connect from browsers; * allows any, and a pattern like https://*.example.com matches subdomains. Empty allows only same-origin requests and clients that send no Origin."`
	Token                             Token                          `key:"token" help:"How connection tokens (JWT) are verified; also subscription tokens unless subscription_token is enabled."`
	SubscriptionToken                 SubscriptionToken              `key:"subscription_token" help:"A separate way to verify subscription tokens."`
	AllowAnonymousConnectWithoutToken bool                           `key:"allow_anonymous_connect_without_token" help:"Accept connections without a token as anonymous (empty user)."`
	DisallowAnonymousConnectionTokens bool                           `key:"disallow_anonymous_connection_tokens" help:"Refuse connection tokens whose user (sub) is empty."`
	PingInterval                      time.Duration                  `key:"ping_interval" default:"25s" min:"-1ns" help:"How often the server pings each connection; negative turns pings off."`
	PongTimeout                       time.Duration                  `key:"pong_timeout" default:"8s" min:"-1ns" help:"How long to wait for a pong after a ping before closing with 3012; negative turns the check off. Must be less than ping_interval."`
	ExpiredCloseDelay                 time.Duration                  `key:"expired_close_delay" default:"25s" help:"Grace period after a connection's credentials expire before it is closed with 3005."`
	ExpiredSubCloseDelay              time.Duration                  `key:"expired_sub_close_delay" default:"25s" help:"Grace period after a subscription token expires before the subscription is closed."`
	StaleCloseDelay                   time.Duration                  `key:"stale_close_delay" default:"10s" min:"1ns" help:"How long a connection may stay without sending connect before it is closed with 3502."`
	ChannelLimit                      int                            `key:"channel_limit" default:"128" help:"Most channels one connection may subscribe to; 0 means no limit."`
	QueueMaxSize                      int                            `key:"queue_max_size" default:"1048576" help:"Most bytes queued for one connection before it is closed with 3008 (slow); 0 means no limit."`
	PresenceUpdateInterval            time.Duration                  `key:"presence_update_interval" default:"27s" min:"1ns" help:"How often a connection refreshes its presence entries."`
	Concurrency                       Unimplemented                  `key:"concurrency" help:"How many commands of one connection may run at once." unsupported:"Gyre runs a connection's commands one by one, in order (Centrifugo's behaviour with 0): remove the key; a connection's slow RPC or proxy call delays its next commands."`
	ChannelPositionCheckDelay         time.Duration                  `key:"channel_position_check_delay" default:"40s" min:"1ns" help:"How often positioned subscriptions check their stream position."`
	ChannelPositionMaxTimeLag         time.Duration                  `key:"channel_position_max_time_lag" help:"How far a positioned subscription's position may lag before it counts as lost; 0 uses the engine default." unsupported:"Gyre checks a positioned subscription's offset and epoch every channel_position_check_delay, without a time lag allowance; remove the key, or lower channel_position_check_delay."`
	ConnectionLimit                   int                            `key:"connection_limit" help:"Most connections on this node; 0 means no limit."`
	UserConnectionLimit               int                            `key:"user_connection_limit" help:"Most connections of one user on this node; 0 means no limit."`
	ConnectionRateLimit               int                            `key:"connection_rate_limit" help:"Most new client connections per second on this node (up to this many at once, refilled continuously); over it a connection request is answered HTTP 503 before any upgrade. 0 means no limit."`
	ConnectIncludeServerTime          bool                           `key:"connect_include_server_time" help:"Put the server time into the connect result."`
	HistoryMaxPublicationLimit        int                            `key:"history_max_publication_limit" default:"300" help:"Most publications a client may get in one history call; 0 means no limit."`
	RecoveryMaxPublicationLimit       int                            `key:"recovery_max_publication_limit" default:"300" help:"Most publications sent on recovery; with more missed the subscription is not recovered."`
	InsecureSkipTokenSignatureVerify  bool                           `key:"insecure_skip_token_signature_verify" help:"Accept connection and subscription tokens without checking their signature, their claims still checked (development only: anyone can then connect as anyone)."`
	UserIDHTTPHeader                  string                         `key:"user_id_http_header" help:"Take the user of a connection that sends no token from this request header, set by a trusted proxy in front (which must remove it from what clients send); connect proxies are not asked for such connections."`
	Insecure                          bool                           `key:"insecure" help:"Accept any connection and subscription without tokens or permissions (testing only)."`
	SubscribeToUserPersonalChannel    SubscribeToUserPersonalChannel `key:"subscribe_to_user_personal_channel" help:"Subscribe every authenticated connection to its user's personal channel on the server side."`
	MaxJSONDepth                      int                            `key:"max_json_depth" default:"256" min:"2" help:"How deep JSON objects and arrays may nest in a client's command, its data included; a deeper command closes the connection with 3501 (bad request)."`
	TagsFilter                        TagsFilterLimits               `key:"tags_filter" help:"Bounds on the publication tags filters clients send with subscribe; a filter over one is refused with error 107 (bad request)."`
	RateLimit                         ClientRateLimit                `key:"rate_limit" help:"Command rate limits per connection and per user (token buckets in memory on each node); see docs/limits.md."`

	Proxy                                 ClientProxy   `key:"proxy" help:"Connect and refresh proxies to the application backend."`
	ConnectProxyName                      string        `key:"connect_proxy_name" help:"Use this proxy from proxies for connect events instead of client.proxy.connect."`
	RefreshProxyName                      string        `key:"refresh_proxy_name" help:"Use this proxy from proxies for refresh events instead of client.proxy.refresh."`
	UserStatusProxyName                   string        `key:"user_status_proxy_name" help:"Use this proxy from proxies for user status events (online, offline) instead of client.proxy.user_status."`
	ConnectCodeToUnidirectionalDisconnect Unimplemented `key:"connect_code_to_unidirectional_disconnect" help:"Mapping of connect error codes to disconnect codes on unidirectional transports." unsupported:"Gyre sends unidirectional clients the connect error's own disconnect code; map codes in the client if it needs others."`
}

// Token configures how tokens are verified. Several key kinds may be set at
// once; the token's alg header selects which one applies.
type Token struct {
	HMACSecretKey string `key:"hmac_secret_key" help:"Secret for HS256, HS384 and HS512 tokens."`
	// The previous secret is kept during a rotation so that tokens signed
	// before it verify until they are replaced.
	HMACPreviousSecretKey           string `key:"hmac_previous_secret_key" help:"The HMAC secret hmac_secret_key replaced: tokens signed with it are still accepted during a key rotation."`
	HMACPreviousSecretKeyValidUntil int64  `key:"hmac_previous_secret_key_valid_until" min:"0" help:"Unix time (seconds) from which tokens signed with hmac_previous_secret_key are refused, by the server's clock; 0 accepts them until the key is removed."`
	MaxLength                       int    `key:"max_length" default:"65536" min:"64" help:"Longest token accepted, in bytes; a longer connection token is refused with 3500 (invalid token), a longer subscription token with error 103, before any decoding."`
	RSAPublicKey                    string `key:"rsa_public_key" help:"RSA public key for RS* and PS* tokens: PEM, base64 of PEM, or a file path."`
	ECDSAPublicKey                  string `key:"ecdsa_public_key" help:"ECDSA public key for ES* tokens: PEM, base64 of PEM, or a file path."`
	JWKSPublicEndpoint              string `key:"jwks_public_endpoint" help:"HTTP(S) URL of a JSON Web Key Set to verify tokens with."`
	Audience                        string `key:"audience" help:"Required aud claim; empty checks none."`
	AudienceRegex                   string `key:"audience_regex" help:"Regular expression the aud claim must match."`
	Issuer                          string `key:"issuer" help:"Required iss claim; empty checks none."`
	IssuerRegex                     string `key:"issuer_regex" help:"Regular expression the iss claim must match."`
	UserIDClaim                     string `key:"user_id_claim" help:"Claim holding the user ID instead of sub; letters and underscores."`
}

// SubscriptionToken configures subscription tokens apart from connection
// tokens.
type SubscriptionToken struct {
	Enabled bool `key:"enabled" help:"Verify subscription tokens with the keys below instead of client.token."`
	Token
}

// SubscribeToUserPersonalChannel configures automatic personal channels.
type SubscribeToUserPersonalChannel struct {
	Enabled                  bool   `key:"enabled" help:"Turn the personal channel subscription on."`
	PersonalChannelNamespace string `key:"personal_channel_namespace" help:"Namespace of the personal channel (namespace:#user); empty uses channels without namespace (#user)."`
	SingleConnection         bool   `key:"single_connection" help:"Keep at most one connection per user, closing older ones; needs presence in the personal channel's namespace."`
}
