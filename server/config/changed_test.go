package config

import (
	"slices"
	"testing"
)

func TestChanged(t *testing.T) {
	a, b := Default(), Default()
	if got := Changed(a, b); len(got) != 0 {
		t.Fatalf("Changed(defaults, defaults) = %q", got)
	}
	b.Client.Proxy.Connect.Endpoint = "http://app/connect"
	b.HTTPServer.Port = 9000
	b.Channel.Namespaces = []Namespace{{Name: "chat", ChannelOptions: ChannelOptions{Presence: true}}}
	b.Proxies = []NamedProxy{{Name: "p", Proxy: Proxy{HTTPHeaders: []string{"Cookie"}}}}
	want := []string{
		"http_server.port",
		"client.proxy.connect.endpoint",
		"channel.namespaces[0].name",
		"channel.namespaces[0].presence",
		"proxies[0].name",
		"proxies[0].http_headers",
	}
	got := Changed(a, b)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("Changed lacks %s: %q", w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("Changed = %q, want exactly %q", got, want)
	}
}
