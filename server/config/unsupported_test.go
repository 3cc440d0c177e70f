package config

import (
	"slices"
	"strings"
	"testing"
)

func TestUnsupported(t *testing.T) {
	tests := []struct {
		name string
		json string
		env  []string
		want []string
	}{
		{"none", `{"websocket": {"write_buffer_size": 0}, "node": {"info_metrics_aggregate_interval": "60s"}, "graphite": {"enabled": false}}`, nil, nil},
		{"typed key changed", `{"websocket": {"write_buffer_size": 8192}, "uni_websocket": {"read_buffer_size": 4096}}`, nil,
			[]string{"websocket.write_buffer_size", "uni_websocket.read_buffer_size"}},
		{"typed key at a non-zero default", `{"node": {"info_metrics_aggregate_interval": "30s"}}`, nil, []string{"node.info_metrics_aggregate_interval"}},
		{"redis broker switched on", `{"broker": {"enabled": true, "type": "redis"}, "presence_manager": {"enabled": true, "type": "redis"}}`, nil, nil},
		{"section configured but off", `{"broker": {"enabled": false, "type": "redis"}}`, nil, nil},
		{"unimplemented in effect", `{"graphite": {"enabled": true}, "channel": {"namespaces": [{"name": "m", "publication_data_format": "json"}]}}`, nil,
			[]string{"channel.namespaces[0].publication_data_format", "graphite"}},
		{"from the environment", `{}`, []string{"CENTRIFUGO_GRAPHITE={\"enabled\":true}", "GYRE_WEBSOCKET_WRITE_BUFFER_SIZE=8192"},
			[]string{"graphite", "websocket.write_buffer_size"}},
		{"from the environment, off", `{}`, []string{"CENTRIFUGO_GRAPHITE={\"enabled\":false}"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := LoadBytes([]byte(tt.json), FormatJSON)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range EnvPrefixes {
				if _, err := c.ApplyEnv(p, tt.env); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, k := range c.Unsupported() {
				if k.Instead == "" || !strings.Contains(k.String(), k.Instead) {
					t.Errorf("%s: no advice on what to do instead", k.Path)
				}
				got = append(got, k.Path)
			}
			slices.Sort(got)
			slices.Sort(tt.want)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Unsupported = %q, want %q", got, tt.want)
			}
		})
	}
}

// A dump of Centrifugo's defaults sets every key, none of them so that it
// changes behaviour.
func TestUnsupportedCentrifugoDefaults(t *testing.T) {
	c, _, err := Load("testdata/centrifugo_defaults.json")
	if err != nil {
		t.Fatal(err)
	}
	if u := c.Unsupported(); len(u) > 0 {
		t.Errorf("Centrifugo's defaults give unsupported keys: %v", u)
	}
}
