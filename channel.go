package gyre

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gyrehq/gyre/match"
)

// ChannelOptions are the options of a namespace (or of channels without
// one). Zero values disable a feature or deny a permission.
type ChannelOptions struct {
	// Presence keeps who is subscribed, for presence and presence_stats.
	Presence bool
	// StateEvents tracks when these channels are occupied (a first
	// subscriber anywhere) and vacated (the last one gone everywhere),
	// through Config.Occupancy.
	StateEvents bool
	// CacheEmptyEvents asks the handler set with OnCacheEmpty to publish
	// the state of these channels when a subscriber recovering in cache
	// mode finds no publication in their history.
	CacheEmptyEvents bool
	// JoinLeave publishes join and leave events; subscribers receive them
	// when they ask for them or when ForcePushJoinLeave is set.
	JoinLeave          bool
	ForcePushJoinLeave bool
	// HistorySize and HistoryTTL keep the last HistorySize publications for
	// HistoryTTL; both must be set for a channel to have history.
	HistorySize int
	HistoryTTL  time.Duration
	// HistoryMetaTTL is how long a stream's offset and epoch outlive its last
	// publication. Zero means the broker's default.
	HistoryMetaTTL time.Duration
	// ForcePositioning and AllowPositioning make the server watch that a
	// subscriber has no gap in its stream (forced, or when the client asks).
	ForcePositioning bool
	AllowPositioning bool
	// ForceRecovery and AllowRecovery let subscribers recover missed
	// publications after a reconnect (forced, or when the client asks).
	ForceRecovery bool
	AllowRecovery bool
	// ForceRecoveryMode is "" (stream) or "cache" (only the latest
	// publication on recovery).
	ForceRecoveryMode string
	// AllowedDeltaTypes lists the delta compressions a subscriber may ask
	// for ("fossil").
	AllowedDeltaTypes []string
	// DeltaPublish makes every publication a delta candidate.
	DeltaPublish bool
	// AllowTagsFilter lets subscribers pass a tags filter.
	AllowTagsFilter bool
	// AllowChannelCompaction lets a subscriber that offers it (subscribe
	// flag 1) receive its pushes with a number, the subscribe result's id,
	// in place of the channel name.
	AllowChannelCompaction bool
	// AllowWildcardSubscriptions makes the names of the namespace (the
	// part after "ns:") dot-separated tokens, and lets a subscriber name a
	// pattern: "*" stands for one token, ">" as the last token for one or
	// more. A pattern subscription receives the publications of every
	// matching channel; names with "*" or ">" can then not be published
	// to. Off, "*" and ">" are ordinary characters of a name.
	AllowWildcardSubscriptions bool

	AllowSubscribeForClient    bool
	AllowSubscribeForAnonymous bool
	AllowPublishForSubscriber  bool
	AllowPublishForClient      bool
	AllowPublishForAnonymous   bool
	AllowPresenceForSubscriber bool
	AllowPresenceForClient     bool
	AllowPresenceForAnonymous  bool
	AllowHistoryForSubscriber  bool
	AllowHistoryForClient      bool
	AllowHistoryForAnonymous   bool
	// AllowUserLimitedChannels enables channels like "dialog#42,43" that
	// only the listed users may subscribe to.
	AllowUserLimitedChannels bool
	// ChannelRegex, when set, is a pattern every channel name of the
	// namespace (the part after the boundary) must match.
	ChannelRegex string

	// SubscriptionType makes the namespace's channels maps ("map",
	// "map_clients", "map_users") instead of streams ("" or "stream");
	// Map holds their options, which a stream namespace leaves zero.
	SubscriptionType SubscriptionType
	Map              MapChannelOptions
	// SharedPoll holds the options of a shared_poll namespace.
	SharedPoll SharedPollOptions
	// MapClientsPresenceChannelPrefix, on a stream namespace, keeps a map
	// of each channel's subscribers, one key per client id, in the map
	// channel named by the prefix and the channel's name: written when a
	// client subscribes, kept alive with presence, removed when it leaves.
	// The prefix must name a namespace of subscription type map_clients.
	MapClientsPresenceChannelPrefix string
	// MapUsersPresenceChannelPrefix is the same with one key per user id
	// (anonymous clients are left out), in a namespace of type map_users.
	// A user's key is never removed but expires: other connections of the
	// user may still be subscribed.
	MapUsersPresenceChannelPrefix string

	channelRegex *regexp.Regexp
	// deltaSeen: the namespace has allowed a delta type in this node's
	// rules since the node started, and may have subscribers that take
	// deltas (a subscription keeps what it negotiated across a change of
	// the rules). Without it, no publication of the namespace asks the
	// broker for delta, and the broker is told that its channels keep no
	// delta base (broker.PublishOptions.NoDelta).
	deltaSeen bool
}

// HistoryEnabled reports whether channels with these options keep history.
func (o *ChannelOptions) HistoryEnabled() bool {
	return o.HistorySize > 0 && o.HistoryTTL > 0
}

// Namespace is a named set of channel options: channel "chat:index" belongs
// to namespace "chat".
type Namespace struct {
	Name string
	ChannelOptions
}

// ChannelConfig is how channel names are read and which options apply.
// The zero value uses the standard boundaries and denies everything to
// clients.
type ChannelConfig struct {
	// WithoutNamespace applies to channels without a namespace boundary.
	WithoutNamespace ChannelOptions
	Namespaces       []Namespace
	// NamespaceBoundary separates namespace and name; "" means ":".
	NamespaceBoundary string
	// UserBoundary starts the user list of a user-limited channel; "" means "#".
	UserBoundary string
	// UserSeparator separates users in that list; "" means ",".
	UserSeparator string
	// PrivatePrefix marks channels that need a subscription token; "" means "$".
	PrivatePrefix string
	// MaxLength of a channel name in bytes; 0 means 255.
	MaxLength int
}

var namespaceNameRe = regexp.MustCompile(`^[-a-zA-Z0-9_.]{2,}$`)

// channelRules is a ChannelConfig prepared for lookups. It is immutable and
// replaced as a whole on reload.
type channelRules struct {
	cfg        ChannelConfig
	namespaces map[string]*ChannelOptions
	// privateScope is the pattern scope of private channels without a
	// namespace (see patternScope).
	privateScope string
}

// newChannelRules prepares cfg; presenceInterval is the node's
// PresenceUpdateInterval, which the keys of map presence channels outlive.
func newChannelRules(cfg ChannelConfig, presenceInterval time.Duration) (*channelRules, error) {
	if cfg.NamespaceBoundary == "" {
		cfg.NamespaceBoundary = ":"
	}
	if cfg.UserBoundary == "" {
		cfg.UserBoundary = "#"
	}
	if cfg.UserSeparator == "" {
		cfg.UserSeparator = ","
	}
	if cfg.PrivatePrefix == "" {
		cfg.PrivatePrefix = "$"
	}
	if cfg.MaxLength == 0 {
		cfg.MaxLength = 255
	}
	r := &channelRules{cfg: cfg, namespaces: make(map[string]*ChannelOptions, len(cfg.Namespaces))}
	r.privateScope = cfg.PrivatePrefix + cfg.NamespaceBoundary
	if err := prepareOptions(&r.cfg.WithoutNamespace, "without_namespace", presenceInterval); err != nil {
		return nil, err
	}
	r.cfg.Namespaces = append([]Namespace(nil), cfg.Namespaces...)
	for i := range r.cfg.Namespaces {
		ns := &r.cfg.Namespaces[i]
		if !namespaceNameRe.MatchString(ns.Name) {
			return nil, fmt.Errorf("gyre: namespace %q: name must match %s", ns.Name, namespaceNameRe)
		}
		if _, ok := r.namespaces[ns.Name]; ok {
			return nil, fmt.Errorf("gyre: namespace %q: defined twice", ns.Name)
		}
		if err := prepareOptions(&ns.ChannelOptions, "namespace "+ns.Name, presenceInterval); err != nil {
			return nil, err
		}
		r.namespaces[ns.Name] = &ns.ChannelOptions
	}
	if err := r.checkMapPresence(); err != nil {
		return nil, err
	}
	return r, nil
}

func prepareOptions(o *ChannelOptions, where string, presenceInterval time.Duration) error {
	if (o.HistorySize > 0) != (o.HistoryTTL > 0) {
		return fmt.Errorf("gyre: %s: history_size and history_ttl must be set together", where)
	}
	if (o.ForceRecovery || o.AllowRecovery) && !o.HistoryEnabled() {
		return fmt.Errorf("gyre: %s: recovery needs history (history_size and history_ttl)", where)
	}
	switch o.ForceRecoveryMode {
	case "", "stream", "cache":
	default:
		return fmt.Errorf("gyre: %s: force_recovery_mode %q: want \"stream\" or \"cache\"", where, o.ForceRecoveryMode)
	}
	for _, d := range o.AllowedDeltaTypes {
		if d != "fossil" {
			return fmt.Errorf("gyre: %s: allowed_delta_types: unknown delta type %q", where, d)
		}
	}
	o.deltaSeen = len(o.AllowedDeltaTypes) > 0
	if o.ChannelRegex != "" {
		re, err := regexp.Compile(o.ChannelRegex)
		if err != nil {
			return fmt.Errorf("gyre: %s: channel_regex: %w", where, err)
		}
		o.channelRegex = re
	}
	return o.prepareMap(where, presenceInterval)
}

// lookup returns the options of a channel and whether its name is valid.
// An unknown namespace or a malformed name gives ErrorUnknownChannel; a
// pattern, which names no channel (only a subscription may), gives
// ErrorBadRequest.
func (r *channelRules) lookup(channel string) (*ChannelOptions, error) {
	opts, pattern, err := r.lookupSubscribe(channel)
	if err == nil && pattern {
		return nil, ErrorBadRequest
	}
	return opts, err
}

// keepDeltaSeen carries deltaSeen over from the rules r replaces: a
// namespace that allowed delta keeps publishing as one that may have
// delta subscribers after a change of the rules takes delta away, since
// its subscribers keep what they negotiated.
func (r *channelRules) keepDeltaSeen(old *channelRules) {
	if old == nil {
		return
	}
	r.cfg.WithoutNamespace.deltaSeen = r.cfg.WithoutNamespace.deltaSeen || old.cfg.WithoutNamespace.deltaSeen
	for name, o := range r.namespaces {
		if prev, ok := old.namespaces[name]; ok && prev.deltaSeen {
			o.deltaSeen = true
		}
	}
}

// lookupSubscribe is lookup for a subscription, which may name a pattern
// where the namespace allows wildcard subscriptions. A name with a
// wildcard character that is not a well-formed pattern gives
// ErrorBadRequest. A pattern is not held to the namespace's channel
// regex: it only ever receives publications of channels that are.
func (r *channelRules) lookupSubscribe(channel string) (opts *ChannelOptions, pattern bool, err error) {
	if channel == "" || len(channel) > r.cfg.MaxLength {
		return nil, false, ErrorUnknownChannel
	}
	opts, name, err := r.split(channel)
	if err != nil {
		return nil, false, err
	}
	if opts.AllowWildcardSubscriptions && match.IsPattern(name) {
		if match.ValidPattern(name) != nil {
			return nil, false, ErrorBadRequest
		}
		return opts, true, nil
	}
	if opts.channelRegex != nil && !opts.channelRegex.MatchString(name) {
		return nil, false, ErrorUnknownChannel
	}
	return opts, false, nil
}

// split returns the options of a channel's namespace and the name within
// it.
func (r *channelRules) split(channel string) (*ChannelOptions, string, error) {
	name := strings.TrimPrefix(channel, r.cfg.PrivatePrefix)
	if ns, rest, ok := strings.Cut(name, r.cfg.NamespaceBoundary); ok {
		o, found := r.namespaces[ns]
		if !found {
			return nil, "", ErrorUnknownChannel
		}
		return o, rest, nil
	}
	return &r.cfg.WithoutNamespace, name, nil
}

// patternScope splits a channel or pattern of a namespace that allows
// wildcard subscriptions into its scope, the part up to and including
// the namespace boundary ("news:", "$news:"), and the dot-separated name
// after it that patterns are matched against. A channel without a
// namespace has the boundary alone (or the private prefix and the
// boundary) as its scope: no namespace is named that way, since names
// have two characters at least, and the scope is never empty.
func (r *channelRules) patternScope(channel string) (scope, name string) {
	rest := strings.TrimPrefix(channel, r.cfg.PrivatePrefix)
	private := len(channel) - len(rest)
	if i := strings.Index(rest, r.cfg.NamespaceBoundary); i >= 0 {
		end := private + i + len(r.cfg.NamespaceBoundary)
		return channel[:end], channel[end:]
	}
	if private > 0 {
		return r.privateScope, rest
	}
	return r.cfg.NamespaceBoundary, rest
}

// patternName is the name of channel within its pattern scope, as
// patternScope returns it: the scope is the channel's start, but for a
// channel without a namespace, whose scope adds the boundary to it.
func (r *channelRules) patternName(scope, channel string) string {
	if strings.HasPrefix(channel, scope) {
		return channel[len(scope):]
	}
	return channel[min(len(channel), len(scope)-len(r.cfg.NamespaceBoundary)):]
}

// isPrivate reports whether a channel needs a subscription token.
func (r *channelRules) isPrivate(channel string) bool {
	return strings.HasPrefix(channel, r.cfg.PrivatePrefix)
}

// userAllowed reports whether a user-limited channel ("dialog#42,43")
// lists user, and whether the channel is user-limited at all.
func (r *channelRules) userAllowed(channel, user string) (limited, allowed bool) {
	_, users, ok := strings.Cut(channel, r.cfg.UserBoundary)
	if !ok {
		return false, false
	}
	if user == "" {
		return true, false
	}
	for u := range strings.SplitSeq(users, r.cfg.UserSeparator) {
		if u == user {
			return true, true
		}
	}
	return true, false
}
