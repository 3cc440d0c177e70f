package server

import (
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/filter"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/token"
)

// nodeConfig turns the server's configuration into the engine's.
func nodeConfig(c *config.Config) gyre.Config {
	cl := c.Client
	return gyre.Config{
		Name:                              c.Node.Name,
		Version:                           Version,
		Channels:                          channelConfig(c),
		Token:                             tokenConfig(cl.Token, cl.InsecureSkipTokenSignatureVerify),
		SubscriptionToken:                 gyre.SubscriptionTokenConfig{Enabled: cl.SubscriptionToken.Enabled, Config: tokenConfig(cl.SubscriptionToken.Token, cl.InsecureSkipTokenSignatureVerify)},
		Insecure:                          cl.Insecure,
		AllowAnonymousConnectWithoutToken: cl.AllowAnonymousConnectWithoutToken,
		DisallowAnonymousConnectionTokens: cl.DisallowAnonymousConnectionTokens,
		PingInterval:                      cl.PingInterval,
		PongTimeout:                       cl.PongTimeout,
		ExpiredCloseDelay:                 cl.ExpiredCloseDelay,
		ChannelLimit:                      channelLimit(cl.ChannelLimit),
		PositionCheckInterval:             cl.ChannelPositionCheckDelay,
		StaleCloseDelay:                   cl.StaleCloseDelay,
		ExpiredSubCloseDelay:              cl.ExpiredSubCloseDelay,
		QueueMaxSize:                      cl.QueueMaxSize,
		ConnectionLimit:                   cl.ConnectionLimit,
		UserConnectionLimit:               cl.UserConnectionLimit,
		HistoryMaxPublicationLimit:        cl.HistoryMaxPublicationLimit,
		RecoveryMaxPublicationLimit:       cl.RecoveryMaxPublicationLimit,
		PresenceUpdateInterval:            cl.PresenceUpdateInterval,
		ConnectIncludeServerTime:          cl.ConnectIncludeServerTime,
		SubscribeToUserPersonalChannel:    cl.SubscribeToUserPersonalChannel.Enabled,
		PersonalChannelNamespace:          cl.SubscribeToUserPersonalChannel.PersonalChannelNamespace,
		SingleConnection:                  cl.SubscribeToUserPersonalChannel.SingleConnection,
		MaxJSONDepth:                      cl.MaxJSONDepth,
		TagsFilterLimits: filter.Limits{
			MaxDepth: cl.TagsFilter.MaxDepth, MaxNodes: cl.TagsFilter.MaxNodes,
			MaxValues: cl.TagsFilter.MaxValues, MaxValueLen: cl.TagsFilter.MaxValueLength,
		},
		UserStatusEvents: cl.Proxy.UserStatus.Enabled || cl.UserStatusProxyName != "",
		OccupancyOptions: broker.OccupancyOptions{ChannelDelay: c.EventHooks.VacatedDelay, UserDelay: c.EventHooks.OfflineDelay},
		RateLimit: gyre.RateLimitConfig{
			Client:     commandRates(cl.RateLimit.ClientCommand),
			User:       commandRates(cl.RateLimit.UserCommand),
			Disconnect: cl.RateLimit.Disconnect,
		},
	}
}

// channelLimit maps client.channel_limit to the engine's: 0 means no
// limit there, as in Centrifugo, while the engine's zero value means its
// default (128, the key's default too).
func channelLimit(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// commandRates takes the enabled buckets of c; a section that is off
// gives none.
func commandRates(c config.CommandRateLimit) gyre.CommandRates {
	if !c.Enabled {
		return gyre.CommandRates{}
	}
	b := func(cb config.CommandBuckets) []gyre.RateBucket {
		if !cb.Enabled {
			return nil
		}
		out := make([]gyre.RateBucket, 0, len(cb.Buckets))
		for _, x := range cb.Buckets {
			out = append(out, gyre.RateBucket{Interval: x.Interval, Rate: x.Rate})
		}
		return out
	}
	return gyre.CommandRates{
		Total: b(c.Total), Default: b(c.Default),
		Subscribe: b(c.Subscribe), Publish: b(c.Publish), History: b(c.History),
		Presence: b(c.Presence), PresenceStats: b(c.PresenceStats), RPC: b(c.RPC),
		Refresh: b(c.Refresh), SubRefresh: b(c.SubRefresh),
	}
}

// tokenConfig is the token package's configuration of t; skipSignature is
// client.insecure_skip_token_signature_verify, which covers both kinds of
// token.
func tokenConfig(t config.Token, skipSignature bool) token.Config {
	var prevUntil time.Time
	if t.HMACPreviousSecretKeyValidUntil > 0 {
		prevUntil = time.Unix(t.HMACPreviousSecretKeyValidUntil, 0)
	}
	return token.Config{
		HMACSecretKey:                   t.HMACSecretKey,
		InsecureSkipSignatureVerify:     skipSignature,
		MaxLength:                       t.MaxLength,
		HMACPreviousSecretKey:           t.HMACPreviousSecretKey,
		HMACPreviousSecretKeyValidUntil: prevUntil,
		RSAPublicKey:                    t.RSAPublicKey,
		ECDSAPublicKey:                  t.ECDSAPublicKey,
		JWKSPublicEndpoint:              t.JWKSPublicEndpoint,
		Audience:                        t.Audience,
		AudienceRegex:                   t.AudienceRegex,
		Issuer:                          t.Issuer,
		IssuerRegex:                     t.IssuerRegex,
		UserIDClaim:                     t.UserIDClaim,
	}
}

func channelConfig(c *config.Config) gyre.ChannelConfig {
	ch := c.Channel
	out := gyre.ChannelConfig{
		WithoutNamespace:  channelOptions(ch.WithoutNamespace, ch.HistoryMetaTTL),
		NamespaceBoundary: ch.NamespaceBoundary,
		UserBoundary:      ch.UserBoundary,
		UserSeparator:     ch.UserSeparator,
		PrivatePrefix:     ch.PrivatePrefix,
		MaxLength:         ch.MaxLength,
	}
	for _, ns := range ch.Namespaces {
		out.Namespaces = append(out.Namespaces, gyre.Namespace{Name: ns.Name, ChannelOptions: channelOptions(ns.ChannelOptions, ch.HistoryMetaTTL)})
	}
	if natsWildcards(c) {
		// broker.nats.allow_wildcards lets clients subscribe to patterns
		// everywhere, as Centrifugo's NATS broker does: in every stream
		// namespace (map and shared-poll channels have no patterns).
		allowPatterns(&out.WithoutNamespace)
		for i := range out.Namespaces {
			allowPatterns(&out.Namespaces[i].ChannelOptions)
		}
	}
	return out
}

// allowPatterns lets clients subscribe to patterns in o, a stream
// namespace.
func allowPatterns(o *gyre.ChannelOptions) {
	if !o.SubscriptionType.IsMap() && o.SubscriptionType != gyre.SubscriptionTypeSharedPoll {
		o.AllowWildcardSubscriptions = true
	}
}

// natsWildcards reports whether broker.nats.allow_wildcards is in effect:
// on a nats or redisnats broker.
func natsWildcards(c *config.Config) bool {
	b := c.Broker
	return b.Enabled && (b.Type == "nats" || b.Type == "redisnats") && b.Nats.AllowWildcards
}

func channelOptions(o config.ChannelOptions, metaTTL time.Duration) gyre.ChannelOptions {
	if o.HistoryMetaTTL > 0 {
		metaTTL = o.HistoryMetaTTL
	}
	mode := o.ForceRecoveryMode
	if mode == "stream" {
		mode = ""
	}
	return gyre.ChannelOptions{
		Presence:                   o.Presence,
		StateEvents:                o.StateProxyEnabled,
		CacheEmptyEvents:           o.CacheEmptyProxyEnabled,
		JoinLeave:                  o.JoinLeave,
		ForcePushJoinLeave:         o.ForcePushJoinLeave,
		HistorySize:                o.HistorySize,
		HistoryTTL:                 o.HistoryTTL,
		HistoryMetaTTL:             metaTTL,
		ForcePositioning:           o.ForcePositioning,
		AllowPositioning:           o.AllowPositioning,
		ForceRecovery:              o.ForceRecovery,
		AllowRecovery:              o.AllowRecovery,
		ForceRecoveryMode:          mode,
		AllowedDeltaTypes:          o.AllowedDeltaTypes,
		DeltaPublish:               o.DeltaPublish,
		AllowTagsFilter:            o.AllowTagsFilter,
		AllowChannelCompaction:     o.AllowChannelCompaction,
		AllowWildcardSubscriptions: o.AllowWildcardSubscriptions,
		AllowSubscribeForClient:    o.AllowSubscribeForClient,
		AllowSubscribeForAnonymous: o.AllowSubscribeForAnonymous,
		AllowPublishForSubscriber:  o.AllowPublishForSubscriber,
		AllowPublishForClient:      o.AllowPublishForClient,
		AllowPublishForAnonymous:   o.AllowPublishForAnonymous,
		AllowPresenceForSubscriber: o.AllowPresenceForSubscriber,
		AllowPresenceForClient:     o.AllowPresenceForClient,
		AllowPresenceForAnonymous:  o.AllowPresenceForAnonymous,
		AllowHistoryForSubscriber:  o.AllowHistoryForSubscriber,
		AllowHistoryForClient:      o.AllowHistoryForClient,
		AllowHistoryForAnonymous:   o.AllowHistoryForAnonymous,
		AllowUserLimitedChannels:   o.AllowUserLimitedChannels,
		ChannelRegex:               o.ChannelRegex,

		SubscriptionType:                gyre.SubscriptionType(o.SubscriptionType),
		Map:                             mapChannelOptions(o),
		SharedPoll:                      sharedPollChannelOptions(o),
		MapClientsPresenceChannelPrefix: o.MapClientsPresenceChannelPrefix,
		MapUsersPresenceChannelPrefix:   o.MapUsersPresenceChannelPrefix,
	}
}

// mapChannelOptions are the engine's map options of a namespace; none for
// a stream namespace (whose map keys Validate refused).
func mapChannelOptions(o config.ChannelOptions) gyre.MapChannelOptions {
	if !gyre.SubscriptionType(o.SubscriptionType).IsMap() {
		return gyre.MapChannelOptions{}
	}
	m := o.Map
	// Validate accepted only the config names of the modes.
	mode, _ := gyre.ParseMapMode(m.Mode)
	return gyre.MapChannelOptions{
		Mode:                              mode,
		KeyTTL:                            m.KeyTTL,
		StreamSize:                        m.StreamSize,
		StreamTTL:                         m.StreamTTL,
		MetaTTL:                           m.MetaTTL,
		AllowPublishForClient:             m.AllowPublishForClient,
		AllowPublishForSubscriber:         m.AllowPublishForSubscriber,
		AllowPublishForAnonymous:          m.AllowPublishForAnonymous,
		AllowRemoveForClient:              m.AllowRemoveForClient,
		AllowRemoveForSubscriber:          m.AllowRemoveForSubscriber,
		AllowRemoveForAnonymous:           m.AllowRemoveForAnonymous,
		ClientKey:                         m.ClientKey,
		RemoveClientOnUnsubscribe:         m.RemoveClientOnUnsubscribe,
		DefaultPageSize:                   m.DefaultPageSize,
		MinPageSize:                       m.MinPageSize,
		MaxPageSize:                       m.MaxPageSize,
		LiveTransitionMaxPublicationLimit: m.LiveTransitionMaxPublicationLimit,
		SubscribeCatchUpTimeout:           m.SubscribeCatchUpTimeout,
	}
}

// sharedPollChannelOptions are the engine's shared-poll options of a
// namespace; none for the others, whose shared_poll keys mean nothing
// (Notices names them).
func sharedPollChannelOptions(o config.ChannelOptions) gyre.SharedPollOptions {
	if !o.IsSharedPoll() {
		return gyre.SharedPollOptions{}
	}
	s := o.SharedPoll
	return gyre.SharedPollOptions{
		RefreshInterval:        s.RefreshInterval,
		RefreshBatchSize:       s.RefreshBatchSize,
		MaxKeysPerConnection:   s.MaxKeysPerConnection,
		Versioned:              s.Mode == "versioned",
		ShutdownDelay:          s.ChannelShutdownDelay,
		TrackExpiredExtraDelay: s.TrackExpiredExtraDelay,
		PublishEnabled:         s.PublishEnabled,
		Route:                  sharedPollRoute(s),
	}
}

// sharedPollRoute names the proxy that polls a namespace's keys, as the
// engine passes it to the refresh handler: "" for the default one
// (channel.proxy.shared_poll_refresh), else its name in proxies.
func sharedPollRoute(s config.SharedPollOptions) string {
	if s.ProxyName == "default" {
		return ""
	}
	return s.ProxyName
}

// sharedPollConcurrency is how many calls polling the backend a node
// makes at once: shared_poll.concurrency_limit, 64 when it is 0.
func sharedPollConcurrency(c *config.Config) int {
	if n := c.SharedPoll.ConcurrencyLimit; n > 0 {
		return n
	}
	return 64
}
