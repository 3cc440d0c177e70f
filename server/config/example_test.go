package config_test

import (
	"fmt"

	"github.com/gyrehq/gyre/server/config"
)

func ExampleResolve() {
	c, warnings, err := config.Resolve(config.Sources{
		Environ: []string{"GYRE_HTTP_SERVER_PORT=9000", "GYRE_CLIENT_TOKEN_HMAC_SECRET_KEY=secret"},
		Flags:   map[string]string{"log.level": "debug"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.HTTPServer.Port, c.Log.Level, len(warnings))
	// Output: 9000 debug 0
}

func ExampleLoadBytes() {
	file := `{
		"client": {"token": {"hmac_secret_key": "secret"}, "ping_interval": "20s"},
		"channel": {"namespaces": [{"name": "chat", "history_size": 10, "history_ttl": "5m"}]},
		"clinet": {}
	}`
	c, warnings, err := config.LoadBytes([]byte(file), config.FormatJSON)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Client.PingInterval, c.Channel.Namespaces[0].HistoryTTL)
	fmt.Println(warnings)
	c.Channel.Namespaces[0].HistoryTTL = 0
	fmt.Println(c.Validate())
	// Output:
	// 20s 5m0s
	// [config: unknown key "clinet" ignored (did you mean "client"?)]
	// config: channel.namespaces[0].history_ttl: must be set when history_size is set
}
