package gyre

import (
	"testing"
)

// TestBrokerPublishOptionsNoDelta: the broker is told that a channel
// keeps no delta base (NoDelta), and never asked for delta there, only
// when its namespace has allowed no delta type since the node started:
// a namespace that allowed one may still have subscribers that take
// deltas after a reload takes it away.
func TestBrokerPublishOptionsNoDelta(t *testing.T) {
	config := func(delta ...string) ChannelConfig {
		var allowed []string
		for _, ns := range delta {
			if ns == "" {
				allowed = []string{"fossil"}
			}
		}
		cfg := ChannelConfig{WithoutNamespace: ChannelOptions{AllowedDeltaTypes: allowed}}
		for _, name := range []string{"aa", "bb", "cc"} {
			o := ChannelOptions{DeltaPublish: name == "cc"}
			for _, ns := range delta {
				if ns == name {
					o.AllowedDeltaTypes = []string{"fossil"}
				}
			}
			cfg.Namespaces = append(cfg.Namespaces, Namespace{Name: name, ChannelOptions: o})
		}
		return cfg
	}
	n, err := NewNode(Config{Insecure: true, Channels: config("aa")})
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string, want map[string]bool) {
		t.Helper()
		rules := n.rules.Load()
		for _, ch := range []string{"aa:x", "bb:x", "cc:x", "x"} {
			chOpts, err := rules.lookup(ch)
			if err != nil {
				t.Fatal(err)
			}
			bo := n.brokerPublishOptions(rules, ch, chOpts, PublishOptions{UseDelta: true})
			noDelta := !want[ch]
			if bo.NoDelta != noDelta || bo.UseDelta == noDelta {
				t.Errorf("%s, %s: NoDelta %v, UseDelta %v; want %v, %v", step, ch, bo.NoDelta, bo.UseDelta, noDelta, !noDelta)
			}
			if !noDelta {
				continue
			}
			if bo := n.brokerPublishOptions(rules, ch, chOpts, PublishOptions{}); !bo.NoDelta || bo.UseDelta {
				t.Errorf("%s, %s without delta asked: NoDelta %v, UseDelta %v; want true, false", step, ch, bo.NoDelta, bo.UseDelta)
			}
		}
	}
	check("start", map[string]bool{"aa:x": true})
	if err := n.SetChannelConfig(config("bb", "")); err != nil {
		t.Fatal(err)
	}
	check("delta moved to bb and the channels without namespace", map[string]bool{"aa:x": true, "bb:x": true, "x": true})
	if err := n.SetChannelConfig(config()); err != nil {
		t.Fatal(err)
	}
	check("no delta anywhere", map[string]bool{"aa:x": true, "bb:x": true, "x": true})
}
