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

	Proxy                 ChannelProxy  `key:"proxy" help:"Default subscribe, publish, sub_refresh and subscribe_stream proxies."`
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
	SubscribeStreamProxyBidirectional bool          `key:"subscribe_stream_proxy_bidirectional" help:"Make subscription streams bidirectional (client publications go to the backend stream)."`
	PublicationDataFormat             Unimplemented `key:"publication_data_format" help:"Validation of publication data format." unsupported:"Gyre does not check publication data; validate it in a publish proxy (channel.proxy.publish) or in the backend that calls the server API."`
	SubscriptionType                  Unimplemented `key:"subscription_type" help:"Keyed-state (map) subscriptions." unsupported:"Gyre has stream subscriptions only; keep keyed state in the application and publish changes to an ordinary channel."`
}
