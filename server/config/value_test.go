package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDurations(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    time.Duration
		wantErr string
	}{
		{"seconds", `"25s"`, 25 * time.Second, ""},
		{"composite", `"1m30s"`, 90 * time.Second, ""},
		{"hours", `"720h"`, 720 * time.Hour, ""},
		{"milliseconds", `"500ms"`, 500 * time.Millisecond, ""},
		{"unquoted", `10s`, 10 * time.Second, ""},
		{"zero string", `"0"`, 0, ""},
		{"zero number", `0`, 0, ""},
		{"negative", `"-1s"`, -time.Second, ""},
		{"spaces", `" 2s "`, 2 * time.Second, ""},
		{"bad unit", `"5x"`, 0, `config: client.ping_interval: invalid duration "5x"`},
		{"bare number", `300`, 0, `config: client.ping_interval: invalid duration 300: give a string with a unit, such as "300s"`},
		{"no unit", `"300"`, 0, `invalid duration "300"`},
		{"empty", `""`, 0, `invalid duration ""`},
		{"bool", `true`, 0, "expected a duration string"},
		{"list", `[1]`, 0, "expected a duration string such as \"25s\", got a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := LoadBytes([]byte("client:\n  ping_interval: "+tt.yaml+"\n"), "yaml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Client.PingInterval != tt.want {
				t.Errorf("ping_interval = %s, want %s", c.Client.PingInterval, tt.want)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {720 * time.Hour, "720h"}, {90 * time.Second, "90s"}, {2 * time.Minute, "2m"},
		{1500 * time.Millisecond, "1500ms"}, {-time.Second, "-1s"}, {1500 * time.Microsecond, "1.5ms"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := formatDuration(tt.d); got != tt.want {
				t.Errorf("formatDuration(%v) = %q, want %q", tt.d, got, tt.want)
			}
			if back, err := time.ParseDuration(tt.want); err != nil || back != tt.d {
				t.Errorf("%q parses back to %v, %v", tt.want, back, err)
			}
		})
	}
}

func TestRedisAddress(t *testing.T) {
	tests := []struct {
		name, format, data string
		env                string
		want               []string
	}{
		{"default", "json", `{}`, "", []string{"redis://127.0.0.1:6379"}},
		{"string", "json", `{"engine": {"redis": {"address": "localhost:6379"}}}`, "", []string{"localhost:6379"}},
		{"list", "json", `{"engine": {"redis": {"address": ["a:6379", "b:6379"]}}}`, "", []string{"a:6379", "b:6379"}},
		{"yaml string", "yaml", "engine:\n  redis:\n    address: redis://r:6379\n", "", []string{"redis://r:6379"}},
		{"toml list", "toml", "[engine.redis]\naddress = [\"a:1\", \"b:2\"]\n", "", []string{"a:1", "b:2"}},
		{"env commas", "json", `{}`, "a:1,b:2", []string{"a:1", "b:2"}},
		{"env spaces", "json", `{}`, "a:1  b:2", []string{"a:1", "b:2"}},
		{"env json", "json", `{}`, `["a:1"]`, []string{"a:1"}},
		{"env one", "json", `{"engine": {"redis": {"address": ["x:1", "y:1"]}}}`, "a:1", []string{"a:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, warnings, err := LoadBytes([]byte(tt.data), tt.format)
			if err != nil || len(warnings) > 0 {
				t.Fatalf("LoadBytes = %q, %v", warnings, err)
			}
			if tt.env != "" {
				if _, err := c.ApplyEnv("GYRE", []string{"GYRE_ENGINE_REDIS_ADDRESS=" + tt.env}); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(c.Engine.Redis.Address, tt.want) {
				t.Errorf("address = %q, want %q", c.Engine.Redis.Address, tt.want)
			}
		})
	}
}

func TestScalarCoercion(t *testing.T) {
	tests := []struct {
		name, yaml string
		check      func(*Config) bool
		wantErr    string
	}{
		{"port as string", "http_server: {port: \"9000\"}", func(c *Config) bool { return c.HTTPServer.Port == 9000 }, ""},
		{"port as float", "http_server: {port: 9000.0}", func(c *Config) bool { return c.HTTPServer.Port == 9000 }, ""},
		{"fractional port", "http_server: {port: 90.5}", nil, "expected an integer, got 90.5"},
		{"bool as string", "admin: {enabled: \"true\"}", func(c *Config) bool { return c.Admin.Enabled }, ""},
		{"bool as 1", "admin: {enabled: 1}", func(c *Config) bool { return c.Admin.Enabled }, ""},
		{"bool as 2", "admin: {enabled: 2}", nil, "invalid boolean 2"},
		{"bad bool", "admin: {enabled: maybe}", nil, `config: admin.enabled: invalid boolean "maybe"`},
		{"secret as number", "http_api: {key: 12345}", func(c *Config) bool { return c.HTTPAPI.Key == "12345" }, ""},
		{"string from table", "http_api: {key: {a: 1}}", nil, "config: http_api.key: expected a string, got a table"},
		{"list item table", "client: {allowed_origins: [{a: 1}]}", nil, "item 0: expected a string, got a table"},
		{"null keeps default", "client: {channel_limit: null}", func(c *Config) bool { return c.Client.ChannelLimit == 128 }, ""},
		{"huge int", "client: {channel_limit: 99999999999999999999}", nil, "client.channel_limit"},
		{"non-string yaml keys", "client: {1: x, channel_limit: 3}", func(c *Config) bool { return c.Client.ChannelLimit == 3 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := LoadBytes([]byte(tt.yaml), "yaml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Error("value not loaded as expected")
			}
		})
	}
}
