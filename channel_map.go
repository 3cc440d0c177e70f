package gyre

import (
	"fmt"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// SubscriptionType is what a namespace's channels are: streams of
// publications (the default) or maps, keyed state a subscriber loads and
// then keeps in sync (see MapChannelOptions).
type SubscriptionType string

const (
	// SubscriptionTypeStream ("" too): channels are streams.
	SubscriptionTypeStream SubscriptionType = "stream"
	// SubscriptionTypeMap: channels are maps the application writes
	// (Node.MapPublish, clients where allowed).
	SubscriptionTypeMap SubscriptionType = "map"
	// SubscriptionTypeMapClients: maps of the clients subscribed to a
	// stream channel, one key per client id, kept by the engine for the
	// namespaces whose MapClientsPresenceChannelPrefix points here.
	SubscriptionTypeMapClients SubscriptionType = "map_clients"
	// SubscriptionTypeMapUsers: the same with one key per user id
	// (MapUsersPresenceChannelPrefix).
	SubscriptionTypeMapUsers SubscriptionType = "map_users"
)

// IsMap reports whether channels of this type are maps.
func (t SubscriptionType) IsMap() bool {
	return t == SubscriptionTypeMap || t == SubscriptionTypeMapClients || t == SubscriptionTypeMapUsers
}

// protoType is the type's number in SubscribeRequest.type.
func (t SubscriptionType) protoType() int32 {
	switch t {
	case SubscriptionTypeMap:
		return 1
	case SubscriptionTypeMapClients:
		return 2
	case SubscriptionTypeMapUsers:
		return 3
	case SubscriptionTypeSharedPoll:
		return 4
	}
	return 0
}

// subscriptionTypeOf is the type numbered t in SubscribeRequest.type; ""
// for a stream.
func subscriptionTypeOf(t int32) SubscriptionType {
	switch t {
	case 1:
		return SubscriptionTypeMap
	case 2:
		return SubscriptionTypeMapClients
	case 3:
		return SubscriptionTypeMapUsers
	case 4:
		return SubscriptionTypeSharedPoll
	}
	return ""
}

// MapMode says what a map channel keeps: see broker.MapMode.
type MapMode = broker.MapMode

// Map modes, named here for library users.
const (
	MapModeEphemeral   = broker.MapModeEphemeral
	MapModeRecoverable = broker.MapModeRecoverable
	MapModePersistent  = broker.MapModePersistent
)

// Map client keys: what MapChannelOptions.ClientKey may name.
const (
	MapClientKeyClientID = "client_id"
	MapClientKeyUserID   = "user_id"
)

// MapChannelOptions are the options of a map namespace (see
// SubscriptionType). Zero values mean the defaults said for each field.
type MapChannelOptions struct {
	// Mode is required for subscription type map; map_clients and
	// map_users default to ephemeral.
	Mode MapMode
	// KeyTTL is how long a key lives after its last write: required by
	// the modes with expiry, refused by persistent. map_clients and
	// map_users default to 3×PresenceUpdateInterval, at least 30s.
	KeyTTL time.Duration
	// StreamSize and StreamTTL bound the stream of changes of the modes
	// that keep one; 0 means 100 and one minute. Ephemeral refuses them.
	StreamSize int
	StreamTTL  time.Duration
	// MetaTTL is how long a channel's epoch and offset outlive its last
	// change. 0 means ten times StreamTTL, at least KeyTTL, in
	// recoverable mode and forever in persistent mode (where only 0 is
	// accepted: keys that never expire need the epoch that names them).
	// Ephemeral refuses it.
	MetaTTL time.Duration

	// AllowPublishFor* and AllowRemoveFor* let clients write and remove
	// keys with the publish command, as AllowPublishFor* of streams do:
	// any client, a subscriber of the channel, and anonymous ones too.
	// An OnMapPublish or OnMapRemove handler replaces them.
	AllowPublishForClient     bool
	AllowPublishForSubscriber bool
	AllowPublishForAnonymous  bool
	AllowRemoveForClient      bool
	AllowRemoveForSubscriber  bool
	AllowRemoveForAnonymous   bool
	// ClientKey, when set, makes the key of a client's write or removal
	// its client id ("client_id") or its user id ("user_id", refused to
	// anonymous clients) whatever key it sent.
	ClientKey string
	// RemoveClientOnUnsubscribe removes the key named by the client's id
	// when the client unsubscribes or disconnects.
	RemoveClientOnUnsubscribe bool

	// DefaultPageSize is the page size of a client that asks none, and
	// pages are clamped to [MinPageSize, MaxPageSize]; 0 means 100, 100
	// and 1000.
	DefaultPageSize int
	MinPageSize     int
	MaxPageSize     int
	// LiveTransitionMaxPublicationLimit caps the changes a subscriber may
	// catch up on when it goes live; over it the subscribe fails with 112
	// and the client loads the state again. 0 means MaxPageSize.
	LiveTransitionMaxPublicationLimit int
	// SubscribeCatchUpTimeout bounds the time from a subscriber's first
	// state page to going live; over it the connection is closed with
	// 3008. 0 means 5s, negative no bound.
	SubscribeCatchUpTimeout time.Duration
}

// Defaults of map channel options.
const (
	mapDefaultStreamSize   = 100
	mapDefaultStreamTTL    = time.Minute
	mapDefaultPageSize     = 100
	mapDefaultMinPageSize  = 100
	mapDefaultMaxPageSize  = 1000
	mapDefaultCatchUp      = 5 * time.Second
	mapPresenceMinKeyTTL   = 30 * time.Second
	mapPresenceTTLInterval = 3
)

// MapMaxKeyLength is the longest key, in bytes, a map channel takes.
const MapMaxKeyLength = 256

// brokerOptions are the storage settings a MapBroker is given with every
// call for a channel with these options.
func (m *MapChannelOptions) brokerOptions() broker.MapOptions {
	return broker.MapOptions{Mode: m.Mode, KeyTTL: m.KeyTTL, StreamSize: m.StreamSize, StreamTTL: m.StreamTTL, MetaTTL: m.MetaTTL}
}

// pageLimit is the page size a client asked for (0: none), clamped.
func (m *MapChannelOptions) pageLimit(asked int) int {
	if asked <= 0 {
		return m.DefaultPageSize
	}
	return min(max(asked, m.MinPageSize), m.MaxPageSize)
}

// prepareMap checks the map part of a namespace's options and fills its
// defaults; presenceInterval is the node's PresenceUpdateInterval, which
// the keys of map presence channels must outlive.
func (o *ChannelOptions) prepareMap(where string, presenceInterval time.Duration) error {
	switch o.SubscriptionType {
	case "", SubscriptionTypeStream:
		return o.checkStreamOnly(where)
	case SubscriptionTypeSharedPoll:
		return o.checkSharedPoll(where)
	case SubscriptionTypeMap, SubscriptionTypeMapClients, SubscriptionTypeMapUsers:
	default:
		return fmt.Errorf("gyre: %s: subscription_type %q: want stream, map, map_clients, map_users or shared_poll", where, o.SubscriptionType)
	}
	if o.MapClientsPresenceChannelPrefix != "" || o.MapUsersPresenceChannelPrefix != "" {
		return fmt.Errorf("gyre: %s: map presence channel prefixes belong to stream namespaces", where)
	}
	if o.AllowWildcardSubscriptions {
		return fmt.Errorf("gyre: %s: map channels have no wildcard subscriptions", where)
	}
	m := &o.Map
	if o.SubscriptionType != SubscriptionTypeMap {
		if m.Mode == 0 {
			m.Mode = MapModeEphemeral
		}
		if m.KeyTTL == 0 && m.Mode.HasExpiry() {
			m.KeyTTL = max(mapPresenceTTLInterval*presenceInterval, mapPresenceMinKeyTTL)
		}
		if m.Mode == MapModePersistent {
			return fmt.Errorf("gyre: %s: map.mode persistent: %s keys need to expire (ephemeral or recoverable)", where, o.SubscriptionType)
		}
	}
	if err := m.prepareStorage(where); err != nil {
		return err
	}
	return m.preparePaging(where)
}

// checkStreamOnly refuses, on a stream namespace, the map setting that
// would make a subscriber expect what a stream does not do; the other
// map settings (defaults a config layer fills everywhere) mean nothing
// there and are left alone.
func (o *ChannelOptions) checkStreamOnly(where string) error {
	if o.Map.RemoveClientOnUnsubscribe {
		return fmt.Errorf("gyre: %s: map.remove_client_on_unsubscribe needs subscription_type map, map_clients or map_users", where)
	}
	return nil
}

// prepareStorage checks the mode and its lifetimes and fills the stream
// defaults.
func (m *MapChannelOptions) prepareStorage(where string) error {
	switch m.Mode {
	case MapModeEphemeral, MapModeRecoverable, MapModePersistent:
	case 0:
		return fmt.Errorf("gyre: %s: map.mode is required", where)
	default:
		return fmt.Errorf("gyre: %s: map.mode %d: want ephemeral, recoverable or persistent", where, m.Mode)
	}
	if m.KeyTTL < 0 || m.StreamSize < 0 || m.StreamTTL < 0 || m.MetaTTL < 0 {
		return fmt.Errorf("gyre: %s: map key_ttl, stream_size, stream_ttl and meta_ttl must not be negative", where)
	}
	switch {
	case m.Mode.HasExpiry() && m.KeyTTL == 0:
		return fmt.Errorf("gyre: %s: map.key_ttl is required in mode %s", where, m.Mode)
	case !m.Mode.HasExpiry() && m.KeyTTL != 0:
		return fmt.Errorf("gyre: %s: map.key_ttl must be 0 in mode %s: its keys do not expire", where, m.Mode)
	}
	if !m.Mode.HasStream() {
		if m.StreamSize != 0 || m.StreamTTL != 0 || m.MetaTTL != 0 {
			return fmt.Errorf("gyre: %s: map stream_size, stream_ttl and meta_ttl need a mode with a stream (recoverable or persistent)", where)
		}
		return nil
	}
	if m.StreamSize == 0 {
		m.StreamSize = mapDefaultStreamSize
	}
	if m.StreamTTL == 0 {
		m.StreamTTL = mapDefaultStreamTTL
	}
	if m.MetaTTL == 0 && m.Mode.HasExpiry() {
		m.MetaTTL = max(10*m.StreamTTL, m.KeyTTL)
	}
	switch {
	case m.MetaTTL > 0 && m.MetaTTL < m.StreamTTL:
		return fmt.Errorf("gyre: %s: map.meta_ttl %v must not be shorter than map.stream_ttl %v", where, m.MetaTTL, m.StreamTTL)
	case m.MetaTTL > 0 && m.MetaTTL < m.KeyTTL:
		return fmt.Errorf("gyre: %s: map.meta_ttl %v must not be shorter than map.key_ttl %v", where, m.MetaTTL, m.KeyTTL)
	case m.MetaTTL > 0 && m.KeyTTL == 0:
		return fmt.Errorf("gyre: %s: map.meta_ttl must be 0 in mode %s: its keys never expire", where, m.Mode)
	}
	return nil
}

// preparePaging checks the page sizes, client key and catch-up bound and
// fills their defaults.
func (m *MapChannelOptions) preparePaging(where string) error {
	if m.DefaultPageSize < 0 || m.MinPageSize < 0 || m.MaxPageSize < 0 || m.LiveTransitionMaxPublicationLimit < 0 {
		return fmt.Errorf("gyre: %s: map page sizes must not be negative", where)
	}
	if m.MinPageSize == 0 {
		m.MinPageSize = min(mapDefaultMinPageSize, max(m.MaxPageSize, 1))
		if m.MaxPageSize == 0 {
			m.MinPageSize = mapDefaultMinPageSize
		}
	}
	if m.MaxPageSize == 0 {
		m.MaxPageSize = max(mapDefaultMaxPageSize, m.MinPageSize)
	}
	if m.DefaultPageSize == 0 {
		m.DefaultPageSize = min(max(mapDefaultPageSize, m.MinPageSize), m.MaxPageSize)
	}
	if m.MinPageSize > m.MaxPageSize || m.DefaultPageSize < m.MinPageSize || m.DefaultPageSize > m.MaxPageSize {
		return fmt.Errorf("gyre: %s: map page sizes: want min_page_size %d ≤ default_page_size %d ≤ max_page_size %d",
			where, m.MinPageSize, m.DefaultPageSize, m.MaxPageSize)
	}
	if m.LiveTransitionMaxPublicationLimit == 0 {
		m.LiveTransitionMaxPublicationLimit = m.MaxPageSize
	}
	if m.SubscribeCatchUpTimeout == 0 {
		m.SubscribeCatchUpTimeout = mapDefaultCatchUp
	}
	switch m.ClientKey {
	case "", MapClientKeyClientID, MapClientKeyUserID:
	default:
		return fmt.Errorf("gyre: %s: map.client_key %q: want \"client_id\" or \"user_id\"", where, m.ClientKey)
	}
	return nil
}

// checkMapPresence checks that the map presence prefixes of every stream
// namespace name channels of the matching map type, once every
// namespace is prepared.
func (r *channelRules) checkMapPresence() error {
	check := func(o *ChannelOptions, where string) error {
		for _, p := range []struct {
			key, prefix string
			want        SubscriptionType
		}{
			{"map_clients_presence_channel_prefix", o.MapClientsPresenceChannelPrefix, SubscriptionTypeMapClients},
			{"map_users_presence_channel_prefix", o.MapUsersPresenceChannelPrefix, SubscriptionTypeMapUsers},
		} {
			if p.prefix == "" {
				continue
			}
			target, _, err := r.split(p.prefix)
			if err != nil {
				return fmt.Errorf("gyre: %s: %s %q: names no namespace", where, p.key, p.prefix)
			}
			if target.SubscriptionType != p.want {
				return fmt.Errorf("gyre: %s: %s %q: its namespace has subscription_type %q, want %q", where, p.key, p.prefix, target.SubscriptionType, p.want)
			}
		}
		return nil
	}
	if err := check(&r.cfg.WithoutNamespace, "without_namespace"); err != nil {
		return err
	}
	for i := range r.cfg.Namespaces {
		ns := &r.cfg.Namespaces[i]
		if err := check(&ns.ChannelOptions, "namespace "+ns.Name); err != nil {
			return err
		}
	}
	return nil
}

// ParseMapMode reads a mode's config name: "ephemeral", "recoverable" or
// "persistent"; "" is the zero mode (not set).
func ParseMapMode(s string) (MapMode, error) {
	switch s {
	case "":
		return 0, nil
	case "ephemeral":
		return MapModeEphemeral, nil
	case "recoverable":
		return MapModeRecoverable, nil
	case "persistent":
		return MapModePersistent, nil
	}
	return 0, fmt.Errorf("gyre: map mode %q: want ephemeral, recoverable or persistent", s)
}
