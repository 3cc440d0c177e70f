package gyre_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
)

// TestMapChannelConfig: the map options of a namespace are checked when
// the channel config is set, each refusal naming what is wrong.
func TestMapChannelConfig(t *testing.T) {
	nsOf := func(name string, o gyre.ChannelOptions) gyre.Namespace {
		return gyre.Namespace{Name: name, ChannelOptions: o}
	}
	eph := gyre.MapChannelOptions{Mode: gyre.MapModeEphemeral, KeyTTL: time.Minute}
	for _, tc := range []struct {
		name string
		ns   []gyre.Namespace
		want string // "" accepts
	}{
		{"ephemeral", []gyre.Namespace{nsOf("map", gyre.ChannelOptions{SubscriptionType: "map", Map: eph})}, ""},
		{"persistent", []gyre.Namespace{nsOf("map", gyre.ChannelOptions{SubscriptionType: "map", Map: gyre.MapChannelOptions{Mode: gyre.MapModePersistent}})}, ""},
		{"unknown type", []gyre.Namespace{nsOf("map", gyre.ChannelOptions{SubscriptionType: "shared_pull"})}, "subscription_type"},
		{"shared-poll history", []gyre.Namespace{nsOf("poll", gyre.ChannelOptions{SubscriptionType: "shared_poll", HistorySize: 10, HistoryTTL: time.Minute})}, "keep no history"},
		{"shared-poll publish versionless", []gyre.Namespace{nsOf("poll", gyre.ChannelOptions{SubscriptionType: "shared_poll", SharedPoll: gyre.SharedPollOptions{PublishEnabled: true}})}, "needs mode versioned"},
		{"no mode", []gyre.Namespace{nsOf("map", gyre.ChannelOptions{SubscriptionType: "map"})}, "map.mode is required"},
		{"no key ttl", []gyre.Namespace{nsOf("map", gyre.ChannelOptions{SubscriptionType: "map", Map: gyre.MapChannelOptions{Mode: gyre.MapModeRecoverable}})}, "key_ttl is required"},
		{"persistent with ttl", []gyre.Namespace{nsOf("map", gyre.ChannelOptions{SubscriptionType: "map", Map: gyre.MapChannelOptions{Mode: gyre.MapModePersistent, KeyTTL: time.Second}})}, "key_ttl must be 0"},
		{"ephemeral with stream", []gyre.Namespace{nsOf("map", gyre.ChannelOptions{SubscriptionType: "map", Map: gyre.MapChannelOptions{Mode: gyre.MapModeEphemeral, KeyTTL: time.Minute, StreamSize: 10}})}, "need a mode with a stream"},
		{"meta shorter than stream", []gyre.Namespace{nsOf("map", gyre.ChannelOptions{SubscriptionType: "map", Map: gyre.MapChannelOptions{Mode: gyre.MapModeRecoverable, KeyTTL: time.Second, StreamTTL: time.Minute, MetaTTL: time.Second}})}, "meta_ttl"},
		{"pages", []gyre.Namespace{nsOf("map", gyre.ChannelOptions{SubscriptionType: "map", Map: gyre.MapChannelOptions{Mode: gyre.MapModePersistent, MinPageSize: 500, MaxPageSize: 200}})}, "page sizes"},
		{"client key", []gyre.Namespace{nsOf("map", gyre.ChannelOptions{SubscriptionType: "map", Map: gyre.MapChannelOptions{Mode: gyre.MapModePersistent, ClientKey: "session"}})}, "client_key"},
		{"map options on a stream", []gyre.Namespace{nsOf("map", gyre.ChannelOptions{Map: eph})}, ""},
		{"remove on unsubscribe on a stream", []gyre.Namespace{nsOf("map", gyre.ChannelOptions{Map: gyre.MapChannelOptions{RemoveClientOnUnsubscribe: true}})}, "remove_client_on_unsubscribe"},
		{"presence keys persistent", []gyre.Namespace{nsOf("map", gyre.ChannelOptions{SubscriptionType: "map_clients", Map: gyre.MapChannelOptions{Mode: gyre.MapModePersistent}})}, "need to expire"},
		{"presence defaults", []gyre.Namespace{
			nsOf("clients", gyre.ChannelOptions{SubscriptionType: "map_clients"}),
			nsOf("users", gyre.ChannelOptions{SubscriptionType: "map_users"}),
			nsOf("chat", gyre.ChannelOptions{MapClientsPresenceChannelPrefix: "clients:", MapUsersPresenceChannelPrefix: "users:"}),
		}, ""},
		{"presence prefix of a wrong type", []gyre.Namespace{
			nsOf("users", gyre.ChannelOptions{SubscriptionType: "map_users"}),
			nsOf("chat", gyre.ChannelOptions{MapClientsPresenceChannelPrefix: "users:"}),
		}, "map_clients_presence_channel_prefix"},
		{"presence prefix of no namespace", []gyre.Namespace{
			nsOf("chat", gyre.ChannelOptions{MapUsersPresenceChannelPrefix: "nowhere:"}),
		}, "names no namespace"},
		{"presence prefix on a map", []gyre.Namespace{
			nsOf("clients", gyre.ChannelOptions{SubscriptionType: "map_clients"}),
			nsOf("map", gyre.ChannelOptions{SubscriptionType: "map", Map: eph, MapClientsPresenceChannelPrefix: "clients:"}),
		}, "belong to stream namespaces"},
		{"wildcards on a map", []gyre.Namespace{nsOf("map", gyre.ChannelOptions{SubscriptionType: "map", Map: eph, AllowWildcardSubscriptions: true})}, "wildcard"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gyre.NewNode(gyre.Config{Channels: gyre.ChannelConfig{Namespaces: tc.ns}})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want an error saying %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestMapAPIRefusals: the map API refuses channels outside map
// namespaces, bad keys, and serves nothing without a map broker.
func TestMapAPIRefusals(t *testing.T) {
	cfg := gyre.Config{Channels: gyre.ChannelConfig{Namespaces: []gyre.Namespace{
		{Name: "map", ChannelOptions: gyre.ChannelOptions{SubscriptionType: "map", Map: gyre.MapChannelOptions{Mode: gyre.MapModePersistent}}},
	}}}
	n, err := gyre.NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = n.MapPublish(ctx, "stream", "k", gyre.MapPublishOptions{})
	if !errors.Is(err, gyre.ErrMapNotMapChannel) || !errors.Is(err, gyre.ErrorBadRequest) {
		t.Errorf("publish to a stream channel: %v, want ErrMapNotMapChannel and 107", err)
	}
	_, err = n.MapPublish(ctx, "map:x", "k", gyre.MapPublishOptions{})
	if !errors.Is(err, gyre.ErrMapNotConfigured) || !errors.Is(err, gyre.ErrorNotAvailable) {
		t.Errorf("publish without a map broker: %v, want ErrMapNotConfigured and 108", err)
	}
	if _, err := n.MapStats(ctx, "other:x"); !errors.Is(err, gyre.ErrorUnknownChannel) {
		t.Errorf("stats of an unknown namespace: %v, want 102", err)
	}
}
