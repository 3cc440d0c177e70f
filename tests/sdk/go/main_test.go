package sdk

import (
	"fmt"
	"os"
	"testing"

	"github.com/gyrehq/gyre/tests/sdk/go/internal/gyretest"
)

// srv is the gyre process every test of the package talks to.
var srv *gyretest.Server

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	s, err := gyretest.Start(gyretest.Options{Config: config})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv = s
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "\n--- gyre log (port %d):\n%s\n", s.Port, s.Log())
	}
	s.Stop()
	return code
}

// config is the server configuration the scenarios rely on, that of the
// other SDK suites: "chat" is a history namespace with presence for recovery
// and join/leave, "private" allows nothing without a subscription token; and
// "small" keeps only two publications, so that a client away for longer
// cannot recover; "compact" allows channel compaction, which centrifuge-go
// offers on every subscribe.
func config() map[string]any {
	return map[string]any{
		"log": map[string]any{"level": "info"},
		"client": map[string]any{
			"token":           map[string]any{"hmac_secret_key": gyretest.HMACSecret},
			"allowed_origins": []string{"*"},
		},
		"http_api": map[string]any{"key": gyretest.APIKey},
		"health":   map[string]any{"enabled": true},
		"channel": map[string]any{
			"without_namespace": map[string]any{"allow_subscribe_for_client": true},
			"namespaces": []map[string]any{
				{
					"name":                          "chat",
					"presence":                      true,
					"join_leave":                    true,
					"force_push_join_leave":         true,
					"history_size":                  100,
					"history_ttl":                   "300s",
					"force_recovery":                true,
					"allow_subscribe_for_client":    true,
					"allow_presence_for_subscriber": true,
					"allow_history_for_subscriber":  true,
					"allow_publish_for_subscriber":  true,
				},
				{
					"name":                       "small",
					"history_size":               2,
					"history_ttl":                "300s",
					"force_recovery":             true,
					"allow_subscribe_for_client": true,
				},
				{
					"name":                       "compact",
					"join_leave":                 true,
					"force_push_join_leave":      true,
					"history_size":               10,
					"history_ttl":                "300s",
					"force_recovery":             true,
					"allow_subscribe_for_client": true,
					"allow_channel_compaction":   true,
				},
				{"name": "private"},
			},
		},
	}
}
