package server

import (
	"slices"
	"testing"
	"time"

	"github.com/gyrehq/gyre/server/config"
)

func TestNodeConfig(t *testing.T) {
	t.Parallel()
	c := config.Default()
	c.Node.Name = "n1"
	c.Client.Token.HMACSecretKey = "secret"
	c.Client.Token.Audience = "aud"
	c.Client.SubscriptionToken.Enabled = true
	c.Client.SubscriptionToken.HMACSecretKey = "sub-secret"
	c.Client.PingInterval = 20 * time.Second
	c.Client.PongTimeout = 5 * time.Second
	c.Client.ChannelLimit = 7
	c.Client.QueueMaxSize = 1234
	c.Client.SubscribeToUserPersonalChannel.Enabled = true
	c.Client.SubscribeToUserPersonalChannel.PersonalChannelNamespace = "personal"
	c.Client.SubscribeToUserPersonalChannel.SingleConnection = true
	c.Client.ConnectIncludeServerTime = true
	c.Channel.HistoryMetaTTL = time.Hour
	c.Channel.NamespaceBoundary = "/"
	c.Channel.WithoutNamespace.Presence = true
	c.Channel.WithoutNamespace.ForceRecoveryMode = "stream"
	c.Channel.Namespaces = []config.Namespace{
		{Name: "chat", ChannelOptions: config.ChannelOptions{
			HistorySize: 10, HistoryTTL: time.Minute, HistoryMetaTTL: 2 * time.Hour,
			ForceRecoveryMode: "cache", AllowedDeltaTypes: []string{"fossil"},
			AllowSubscribeForClient: true, ChannelRegex: "^[a-z]+$",
		}},
		{Name: "news", ChannelOptions: config.ChannelOptions{HistorySize: 1, HistoryTTL: time.Second}},
	}

	n := nodeConfig(c)
	checks := []struct {
		name string
		ok   bool
	}{
		{"name", n.Name == "n1"},
		{"version", n.Version == Version},
		{"token secret", n.Token.HMACSecretKey == "secret" && n.Token.Audience == "aud"},
		{"subscription token", n.SubscriptionToken.Enabled && n.SubscriptionToken.HMACSecretKey == "sub-secret"},
		{"ping", n.PingInterval == 20*time.Second && n.PongTimeout == 5*time.Second},
		{"limits", n.ChannelLimit == 7 && n.QueueMaxSize == 1234},
		{"personal channel", n.SubscribeToUserPersonalChannel && n.PersonalChannelNamespace == "personal" && n.SingleConnection},
		{"connect time", n.ConnectIncludeServerTime},
		{"boundary", n.Channels.NamespaceBoundary == "/"},
		{"without namespace", n.Channels.WithoutNamespace.Presence},
		// "stream" is the default recovery mode, which the engine spells "".
		{"stream mode", n.Channels.WithoutNamespace.ForceRecoveryMode == ""},
		{"meta ttl inherited", n.Channels.WithoutNamespace.HistoryMetaTTL == time.Hour},
		{"namespaces", len(n.Channels.Namespaces) == 2 && n.Channels.Namespaces[0].Name == "chat" && n.Channels.Namespaces[1].Name == "news"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not mapped: %+v", c.name, n)
		}
	}
	chat := n.Channels.Namespaces[0].ChannelOptions
	if chat.HistorySize != 10 || chat.HistoryTTL != time.Minute || chat.HistoryMetaTTL != 2*time.Hour ||
		chat.ForceRecoveryMode != "cache" || !slices.Equal(chat.AllowedDeltaTypes, []string{"fossil"}) ||
		!chat.AllowSubscribeForClient || chat.ChannelRegex != "^[a-z]+$" {
		t.Errorf("chat options %+v", chat)
	}
	if news := n.Channels.Namespaces[1].ChannelOptions; news.HistoryMetaTTL != time.Hour {
		t.Errorf("news history meta TTL %v, want the channel-wide 1h", news.HistoryMetaTTL)
	}
}

func TestDevDefaults(t *testing.T) {
	t.Parallel()
	a, b := config.Default(), config.Default()
	secretA, keyA := DevDefaults(a)
	secretB, keyB := DevDefaults(b)
	if secretA == "" || keyA == "" || secretA == secretB || keyA == keyB || secretA == keyA {
		t.Fatalf("secrets %q %q and %q %q: want fresh, distinct values", secretA, keyA, secretB, keyB)
	}
	if a.Client.Token.HMACSecretKey != secretA || a.HTTPAPI.Key != keyA {
		t.Fatal("DevDefaults did not set the secrets it returned")
	}
	o := a.Channel.WithoutNamespace
	if !o.AllowSubscribeForClient || !o.Presence || o.HistorySize == 0 || o.HistoryTTL == 0 || !a.Health.Enabled {
		t.Fatalf("dev channel options %+v", o)
	}

	// Secrets already configured are kept.
	c := config.Default()
	c.Client.Token.HMACSecretKey = "mine"
	c.HTTPAPI.Key = "my-key"
	if s, k := DevDefaults(c); s != "mine" || k != "my-key" {
		t.Fatalf("DevDefaults replaced configured secrets with %q %q", s, k)
	}
}
