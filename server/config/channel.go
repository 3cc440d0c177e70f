package config

import "time"

// Channel configures channel names and the options of channels.
type Channel struct {
	WithoutNamespace  ChannelOptions `key:"without_namespace" help:"Options of channels whose name has no namespace."`
	Namespaces        []Namespace    `key:"namespaces" help:"Channel namespaces, each with a name and its own channel options."`
	HistoryMetaTTL    time.Duration  `key:"history_meta_ttl" default:"720h" precision:"1s" help:"How long a stream's epoch and top offset are kept after its last publication; namespaces may override it."`
	MaxLength         int            `key:"max_length" default:"255" min:"1" help:"Longest channel name accepted, in bytes."`
	PrivatePrefix     string         `key:"private_prefix" default:"$" help:"Prefix of private channels, which need a subscription token (kept for older clients)."`
	NamespaceBoundary string         `key:"namespace_boundary" default:":" nonempty:"true" help:"Separates the namespace from the rest of a channel name."`
	UserBoundary      string         `key:"user_boundary" default:"#" nonempty:"true" help:"Starts the list of users a channel is limited to (chat#42,43)."`
	UserSeparator     string         `key:"user_separator" default:"," nonempty:"true" help:"Separates users in a user-limited channel name."`

	Proxy                 ChannelProxy  `key:"proxy" help:"Default subscribe, publish, sub_refresh, subscribe_stream, map_publish, map_remove, state, cache_empty and shared_poll_refresh proxies."`
	PublicationDataFormat Unimplemented `key:"publication_data_format" help:"Validation of publication data format." unsupported:"Gyre does not check publication data; validate it in a publish proxy (channel.proxy.publish) or in the backend that calls the server API."`
}

// Namespace is a named set of channel options: a channel named ns:rest takes
// the options of the namespace ns.
type Namespace struct {
	Name string `key:"name" help:"Namespace name: at least two of letters, digits, '-', '_' and '.'; unique."`
	ChannelOptions
}

// ChannelOptions are the options of a group of channels.
type ChannelOptions struct {
	Presence                   bool          `key:"presence" help:"Keep presence information (who is subscribed)."`
	JoinLeave                  bool          `key:"join_leave" help:"Publish join and leave events when clients subscribe and unsubscribe."`
	ForcePushJoinLeave         bool          `key:"force_push_join_leave" help:"Send join and leave events to every subscriber without their asking."`
	HistorySize                int           `key:"history_size" help:"Publications kept in each channel's history; 0 keeps no history. Needs history_ttl."`
	HistoryTTL                 time.Duration `key:"history_ttl" precision:"1s" help:"How long a channel's history is kept after its last publication; whole seconds. Needs history_size."`
	HistoryMetaTTL             time.Duration `key:"history_meta_ttl" precision:"1s" help:"Overrides channel.history_meta_ttl for these channels; 0 inherits it."`
	ForcePositioning           bool          `key:"force_positioning" help:"Check every subscriber's stream position and resubscribe it on a gap."`
	AllowPositioning           bool          `key:"allow_positioning" help:"Let clients ask for positioning."`
	ForceRecovery              bool          `key:"force_recovery" help:"Recover missed publications for every resubscribing client; needs history."`
	AllowRecovery              bool          `key:"allow_recovery" help:"Let clients ask for recovery; needs history."`
	ForceRecoveryMode          string        `key:"force_recovery_mode" enum:",stream,cache" help:"stream recovers every missed publication; cache sends only the latest one; empty lets the client choose."`
	AllowedDeltaTypes          []string      `key:"allowed_delta_types" enum:"fossil" help:"Delta compression types subscribers may ask for; only fossil exists."`
	DeltaPublish               bool          `key:"delta_publish" help:"Publish every publication as a delta candidate without the API asking."`
	AllowTagsFilter            bool          `key:"allow_tags_filter" help:"Let subscribers pass a tags filter so only matching publications reach them."`
	AllowChannelCompaction     bool          `key:"allow_channel_compaction" help:"Let subscribers that offer it (subscribe flag 1) receive pushes with a number, given in the subscribe result, in place of the channel name."`
	AllowWildcardSubscriptions bool          `key:"allow_wildcard_subscriptions" help:"Let clients subscribe to patterns: names are dot-separated tokens, * stands for one token, > as the last token for one or more (see docs/wildcards.md)."`
	AllowSubscribeForClient    bool          `key:"allow_subscribe_for_client" help:"Let authenticated clients subscribe without a subscription token."`
	AllowSubscribeForAnonymous bool          `key:"allow_subscribe_for_anonymous" help:"Let anonymous clients subscribe without a subscription token."`
	AllowPublishForSubscriber  bool          `key:"allow_publish_for_subscriber" help:"Let subscribers of a channel publish into it."`
	AllowPublishForClient      bool          `key:"allow_publish_for_client" help:"Let authenticated clients publish."`
	AllowPublishForAnonymous   bool          `key:"allow_publish_for_anonymous" help:"Let anonymous clients publish."`
	AllowPresenceForSubscriber bool          `key:"allow_presence_for_subscriber" help:"Let subscribers of a channel ask for its presence."`
	AllowPresenceForClient     bool          `key:"allow_presence_for_client" help:"Let authenticated clients ask for presence."`
	AllowPresenceForAnonymous  bool          `key:"allow_presence_for_anonymous" help:"Let anonymous clients ask for presence."`
	AllowHistoryForSubscriber  bool          `key:"allow_history_for_subscriber" help:"Let subscribers of a channel ask for its history."`
	AllowHistoryForClient      bool          `key:"allow_history_for_client" help:"Let authenticated clients ask for history."`
	AllowHistoryForAnonymous   bool          `key:"allow_history_for_anonymous" help:"Let anonymous clients ask for history."`
	AllowUserLimitedChannels   bool          `key:"allow_user_limited_channels" help:"Let a user subscribe to channels limited to users (chat#42,43) that name them."`
	ChannelRegex               string        `key:"channel_regex" help:"Regular expression (RE2) the part of a channel name after the namespace must match."`

	SubscribeProxyEnabled             bool          `key:"subscribe_proxy_enabled" help:"Decide subscribe commands of these channels at the backend (tokens and user-limited channels excepted)."`
	SubscribeProxyName                string        `key:"subscribe_proxy_name" default:"default" help:"Proxy for subscribe: \"default\" (channel.proxy.subscribe) or a name from proxies."`
	PublishProxyEnabled               bool          `key:"publish_proxy_enabled" help:"Decide (and possibly rewrite) client publications into these channels at the backend."`
	PublishProxyName                  string        `key:"publish_proxy_name" default:"default" help:"Proxy for publish: \"default\" (channel.proxy.publish) or a name from proxies."`
	SubRefreshProxyEnabled            bool          `key:"sub_refresh_proxy_enabled" help:"Prolong expiring subscriptions of these channels at the backend instead of by the client."`
	SubRefreshProxyName               string        `key:"sub_refresh_proxy_name" default:"default" help:"Proxy for sub_refresh: \"default\" (channel.proxy.sub_refresh) or a name from proxies."`
	SubscribeStreamProxyEnabled       bool          `key:"subscribe_stream_proxy_enabled" help:"Stream subscriptions of these channels from the backend over gRPC (docs/proxy.md): the backend answers the subscribe and then sends publications for that subscriber alone."`
	SubscribeStreamProxyName          string        `key:"subscribe_stream_proxy_name" default:"default" help:"Proxy for subscription streams: \"default\" (channel.proxy.subscribe_stream) or a name from proxies."`
	StateProxyEnabled                 bool          `key:"state_proxy_enabled" help:"Tell the backend when these channels are occupied and vacated (channel state events, docs/event-hooks.md)."`
	StateProxyName                    string        `key:"state_proxy_name" default:"default" help:"Proxy for channel state events: \"default\" (channel.proxy.state) or a name from proxies."`
	CacheEmptyProxyEnabled            bool          `key:"cache_empty_proxy_enabled" help:"Ask the backend to publish the state of these channels when a subscriber in cache recovery mode finds no publication."`
	CacheEmptyProxyName               string        `key:"cache_empty_proxy_name" default:"default" help:"Proxy for cache empty events: \"default\" (channel.proxy.cache_empty) or a name from proxies."`
	SubscribeStreamProxyBidirectional bool          `key:"subscribe_stream_proxy_bidirectional" help:"Make subscription streams bidirectional (client publications go to the backend stream)."`
	PublicationDataFormat             Unimplemented `key:"publication_data_format" help:"Validation of publication data format." unsupported:"Gyre does not check publication data; validate it in a publish proxy (channel.proxy.publish) or in the backend that calls the server API."`
	SubscriptionType                  string        `key:"subscription_type" enum:",stream,map,map_clients,map_users,shared_poll" help:"What the channels are: stream (\"\" too: publications, history), map (keyed state the application writes and subscribers keep in sync; see map), map_clients or map_users (maps of the clients or users subscribed to stream channels, kept by the server for namespaces whose map_clients_presence_channel_prefix or map_users_presence_channel_prefix names them), or shared_poll (keys whose values the server polls from the backend for the clients tracking them; see shared_poll)."`
	Map                               MapOptions    `key:"map" help:"Options of map channels (subscription_type map, map_clients, map_users)."`
	MapClientsPresenceChannelPrefix   string        `key:"map_clients_presence_channel_prefix" help:"On a stream namespace: keep the clients subscribed to each channel C in the map channel of this prefix + C, one key per client id (with its client info), written on subscribe, refreshed while subscribed, removed on unsubscribe. The prefix must name a namespace of subscription_type map_clients."`
	MapUsersPresenceChannelPrefix     string        `key:"map_users_presence_channel_prefix" help:"On a stream namespace: keep the users subscribed to each channel C in the map channel of this prefix + C, one key per user id (anonymous clients left out), refreshed while subscribed and expiring after the map's key_ttl. The prefix must name a namespace of subscription_type map_users."`

	SharedPoll SharedPollOptions `key:"shared_poll" help:"Options of shared_poll channels (subscription_type shared_poll)."`
}

// MapOptions are the options of map channels: what they keep, who may
// write them, how subscribers page through their state.
type MapOptions struct {
	Mode                              string        `key:"mode" enum:",ephemeral,recoverable,persistent" help:"What the channels keep: ephemeral (keys expiring after key_ttl, no stream of changes: a subscriber that was away loads the state again), recoverable (expiring keys and a stream, so a subscriber catches up after a short absence) or persistent (keys live until removed, and a stream). Required for subscription_type map; map_clients and map_users default to ephemeral."`
	KeyTTL                            time.Duration `key:"key_ttl" help:"How long a key lives after its last write (ephemeral, recoverable; required there for subscription_type map, and must be 0 for persistent). map_clients and map_users default to 3 × client.presence_update_interval, at least 30s."`
	StreamSize                        int           `key:"stream_size" help:"Changes kept in each channel's stream (recoverable, persistent); 0 means 100. Must be 0 for ephemeral."`
	StreamTTL                         time.Duration `key:"stream_ttl" help:"How long the stream keeps a change (recoverable, persistent); 0 means 1m. Must be 0 for ephemeral."`
	MetaTTL                           time.Duration `key:"meta_ttl" help:"How long a channel's epoch and offset outlive its last change (recoverable); 0 means 10 × stream_ttl, at least key_ttl. Must not be shorter than stream_ttl or key_ttl; must be 0 for ephemeral and persistent (whose keys need the epoch that names them)."`
	RemoveClientOnUnsubscribe         bool          `key:"remove_client_on_unsubscribe" help:"Remove the key named by a client's id when the client unsubscribes or disconnects."`
	ClientKey                         string        `key:"client_key" enum:",client_id,user_id" help:"Make the key of a client's write or removal its own client id (client_id) or user id (user_id; refused to anonymous clients), whatever key it sent. Not with publish_proxy_enabled or remove_proxy_enabled: the proxy decides the key then."`
	AllowPublishForClient             bool          `key:"allow_publish_for_client" help:"Let authenticated clients write keys (publish with type map). Client writes bypass the backend: prefer a publish proxy."`
	AllowPublishForSubscriber         bool          `key:"allow_publish_for_subscriber" help:"Let subscribers of a channel write its keys."`
	AllowPublishForAnonymous          bool          `key:"allow_publish_for_anonymous" help:"Let anonymous clients write keys too, where allow_publish_for_client or allow_publish_for_subscriber lets clients write."`
	AllowRemoveForClient              bool          `key:"allow_remove_for_client" help:"Let authenticated clients remove keys."`
	AllowRemoveForSubscriber          bool          `key:"allow_remove_for_subscriber" help:"Let subscribers of a channel remove its keys."`
	AllowRemoveForAnonymous           bool          `key:"allow_remove_for_anonymous" help:"Let anonymous clients remove keys too, where allow_remove_for_client or allow_remove_for_subscriber lets clients remove."`
	PublishProxyEnabled               bool          `key:"publish_proxy_enabled" help:"Decide (and possibly rewrite) clients' writes of keys at the backend (the map publish proxy) instead of by the allow_publish_* keys."`
	PublishProxyName                  string        `key:"publish_proxy_name" default:"default" help:"Proxy for map writes: \"default\" (channel.proxy.map_publish) or a name from proxies."`
	RemoveProxyEnabled                bool          `key:"remove_proxy_enabled" help:"Decide clients' removals of keys at the backend (the map remove proxy) instead of by the allow_remove_* keys."`
	RemoveProxyName                   string        `key:"remove_proxy_name" default:"default" help:"Proxy for map removals: \"default\" (channel.proxy.map_remove) or a name from proxies."`
	DefaultPageSize                   int           `key:"default_page_size" help:"State page size of a subscriber that asks none; 0 means 100 (within min_page_size and max_page_size)."`
	MinPageSize                       int           `key:"min_page_size" help:"Smallest state page a subscriber gets; 0 means 100 (at most max_page_size)."`
	MaxPageSize                       int           `key:"max_page_size" help:"Largest state page a subscriber gets; 0 means 1000."`
	LiveTransitionMaxPublicationLimit int           `key:"live_transition_max_publication_limit" help:"Most changes a subscriber may catch up on when it goes live; over it the subscribe fails with 112 and the client loads the state again. 0 means max_page_size."`
	SubscribeCatchUpTimeout           time.Duration `key:"subscribe_catch_up_timeout" help:"Longest time from a subscriber's first state page to going live; over it the connection is closed with 3008. 0 means 5s."`
}
