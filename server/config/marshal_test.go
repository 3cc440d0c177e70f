package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestMarshalRoundTrip(t *testing.T) {
	configs := map[string]*Config{"default": Default(), "centrifugo": wantCentrifugo(), "generated": Generate()}
	for name, c := range configs {
		for _, format := range []string{FormatJSON, FormatYAML, FormatTOML} {
			for _, short := range []bool{false, true} {
				label := name + "/" + format
				if short {
					label += "/non-default"
				}
				t.Run(label, func(t *testing.T) {
					marshal := c.Marshal
					if short {
						marshal = c.MarshalNonDefault
					}
					data, err := marshal(format)
					if err != nil {
						t.Fatal(err)
					}
					back, warnings, err := LoadBytes(data, format)
					if err != nil || len(warnings) > 0 {
						t.Fatalf("LoadBytes(Marshal) = %q, %v\n%s", warnings, err, data)
					}
					if !reflect.DeepEqual(back, c) {
						t.Errorf("round trip differs:\n%s\n--- written:\n%s", diffConfigs(t, back, c), data)
					}
				})
			}
		}
	}
}

func TestMarshalNonDefault(t *testing.T) {
	if out, err := Default().MarshalNonDefault(FormatJSON); err != nil || strings.TrimSpace(string(out)) != "{}" {
		t.Errorf("defaults marshal to %q, %v; want {}", out, err)
	}
	c := Default()
	c.HTTPServer.Port = 9000
	c.Channel.Namespaces = withNamespaceDefaults([]Namespace{{Name: "chat", ChannelOptions: ChannelOptions{Presence: true}}})
	out, err := c.MarshalNonDefault(FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "http_server": {
    "port": 9000
  },
  "channel": {
    "namespaces": [
      {
        "name": "chat",
        "presence": true
      }
    ]
  }
}
`
	if string(out) != want {
		t.Errorf("MarshalNonDefault:\n%s\nwant:\n%s", out, want)
	}
}

func TestMarshalKeepsOrderAndQuotes(t *testing.T) {
	c := Default()
	c.HTTPAPI.Key = "8000"   // a string that looks like a number
	c.Admin.Password = "yes" // a string YAML 1.1 reads as a boolean
	out, err := c.Marshal(FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Index(s, "http_server:") > strings.Index(s, "log:") {
		t.Error("YAML keys are not in declaration order")
	}
	if !strings.Contains(s, `key: "8000"`) {
		t.Errorf("numeric-looking string not quoted:\n%s", s)
	}
}

func TestMarshalUnknownFormat(t *testing.T) {
	if _, err := Default().Marshal("ini"); err == nil || !strings.Contains(err.Error(), `unknown format "ini"`) {
		t.Errorf("Marshal(ini) error = %v", err)
	}
	if _, _, err := LoadBytes([]byte("{}"), "xml"); err == nil || !strings.Contains(err.Error(), `unknown format "xml"`) {
		t.Errorf("LoadBytes(xml) error = %v", err)
	}
}

func TestGenerate(t *testing.T) {
	a, b := Generate(), Generate()
	secrets := func(c *Config) []string {
		return []string{c.Client.Token.HMACSecretKey, c.HTTPAPI.Key, c.Admin.Password, c.Admin.Secret}
	}
	seen := map[string]bool{}
	for _, s := range append(secrets(a), secrets(b)...) {
		if len(s) < 20 {
			t.Errorf("secret %q is too short", s)
		}
		if seen[s] {
			t.Errorf("secret %q repeats", s)
		}
		seen[s] = true
	}
	if err := a.Validate(); err != nil {
		t.Errorf("generated config is invalid: %v", err)
	}
	a.Admin.Enabled = true
	if err := a.Validate(); err != nil {
		t.Errorf("generated config with admin enabled is invalid: %v", err)
	}
}
