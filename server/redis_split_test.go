package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/server/config"
)

// splitConfig is a node with a memory engine, and Redis for the broker,
// the presence manager, or both, as Centrifugo's broker and
// presence_manager sections choose them.
func splitConfig(addr, prefix string, broker, presence bool) *config.Config {
	c := testConfig()
	c.Channel.WithoutNamespace.HistorySize = 10
	c.Channel.WithoutNamespace.HistoryTTL = 60e9
	c.Channel.WithoutNamespace.Presence = true
	c.Channel.WithoutNamespace.AllowPresenceForSubscriber = true
	if broker {
		c.Broker.Enabled, c.Broker.Type = true, "redis"
		c.Broker.Redis.Address, c.Broker.Redis.Prefix = []string{addr}, prefix
	}
	if presence {
		c.PresenceManager.Enabled, c.PresenceManager.Type = true, "redis"
		c.PresenceManager.Redis.Address, c.PresenceManager.Redis.Prefix = []string{addr}, prefix
	}
	return c
}

func historyLen(t *testing.T, base, channel string) int {
	t.Helper()
	status, body := post(t, base+"/api/history", `{"channel":"`+channel+`","limit":-1}`)
	if status != 200 {
		t.Fatalf("history: status %d: %s", status, body)
	}
	var r struct {
		Result struct {
			Publications []json.RawMessage `json:"publications"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("history %s: %v", body, err)
	}
	return len(r.Result.Publications)
}

func presenceClients(t *testing.T, base, channel string) string {
	t.Helper()
	status, body := post(t, base+"/api/presence", `{"channel":"`+channel+`"}`)
	if status != 200 {
		t.Fatalf("presence: status %d: %s", status, body)
	}
	return body
}

func TestBrokerAndPresenceManagerSections(t *testing.T) {
	t.Parallel()
	addr := redistest.Start(t).Addr
	tests := []struct {
		name                     string
		broker, presence         bool
		sharedHist, sharedPresen bool
	}{
		{"broker only", true, false, true, false},
		{"presence manager only", false, true, false, true},
		{"both", true, true, true, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := "split" + string(rune('a'+i))
			_, a := newServer(t, splitConfig(addr, prefix, tt.broker, tt.presence))
			_, b := newServer(t, splitConfig(addr, prefix, tt.broker, tt.presence))
			if status, body := post(t, a+"/api/publish", `{"channel":"news","data":{"n":1}}`); status != 200 {
				t.Fatalf("publish on a: %d %s", status, body)
			}
			if got := historyLen(t, b, "news"); (got == 1) != tt.sharedHist {
				t.Errorf("history on the other node: %d publications; shared broker: %v", got, tt.sharedHist)
			}
			cl := dialConnect(t, a, "alice")
			if code := cl.subscribe("room"); code != 0 {
				t.Fatalf("subscribe: error %d", code)
			}
			if got := strings.Contains(presenceClients(t, b, "room"), `"user":"alice"`); got != tt.sharedPresen {
				t.Errorf("presence of alice seen from the other node: %v; shared presence manager: %v", got, tt.sharedPresen)
			}
		})
	}
}
