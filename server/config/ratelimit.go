package config

import "time"

// ClientRateLimit limits the commands clients send, in the shape of
// Centrifugo PRO's client.rate_limit section (in-memory buckets; the
// Redis-backed variant is not offered).
type ClientRateLimit struct {
	ClientCommand CommandRateLimit `key:"client_command" help:"Token buckets of each connection."`
	UserCommand   CommandRateLimit `key:"user_command" help:"Token buckets of each user on this node, shared by the user's connections there; anonymous connections have none."`
	Disconnect    bool             `key:"disconnect" help:"Close a connection over a limit with 3013 (too many requests) instead of answering the command with error 111."`
}

// CommandRateLimit holds the buckets of each limited command.
type CommandRateLimit struct {
	Enabled       bool           `key:"enabled" help:"Turn these limits on."`
	Total         CommandBuckets `key:"total" help:"Buckets every command with an id takes a token from, whatever its kind."`
	Default       CommandBuckets `key:"default" help:"Buckets of the limited commands below that have none of their own."`
	Subscribe     CommandBuckets `key:"subscribe" help:"Buckets of subscribe commands."`
	Publish       CommandBuckets `key:"publish" help:"Buckets of publish commands."`
	History       CommandBuckets `key:"history" help:"Buckets of history commands."`
	Presence      CommandBuckets `key:"presence" help:"Buckets of presence commands."`
	PresenceStats CommandBuckets `key:"presence_stats" help:"Buckets of presence_stats commands."`
	RPC           CommandBuckets `key:"rpc" help:"Buckets of rpc commands."`
	Refresh       CommandBuckets `key:"refresh" help:"Buckets of refresh commands."`
	SubRefresh    CommandBuckets `key:"sub_refresh" help:"Buckets of sub_refresh commands."`
}

// CommandBuckets is one command kind's buckets; a command needs a token in
// each.
type CommandBuckets struct {
	Enabled bool         `key:"enabled" help:"Turn these buckets on."`
	Buckets []RateBucket `key:"buckets" help:"Token buckets, each allowing rate commands per interval."`
}

// RateBucket allows Rate commands per Interval, refilled continuously; up
// to Rate may come at once.
type RateBucket struct {
	Interval time.Duration `key:"interval" min:"1ms" help:"Length of the bucket's period."`
	Rate     int           `key:"rate" min:"1" help:"Commands allowed per interval; also the most allowed at once."`
}

// TagsFilterLimits bound a client's tags filter (the tf of subscribe).
type TagsFilterLimits struct {
	MaxDepth       int `key:"max_depth" default:"8" min:"1" help:"How deeply filter nodes may nest; one comparison has depth 1."`
	MaxNodes       int `key:"max_nodes" default:"64" min:"1" help:"Most nodes in one filter, branches and leaves together."`
	MaxValues      int `key:"max_values" default:"256" min:"1" help:"Most values in all in and nin lists of one filter together."`
	MaxValueLength int `key:"max_value_length" default:"256" min:"1" help:"Longest key or value in a filter, in bytes."`
}
