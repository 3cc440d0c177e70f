package redis

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	cfg, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Prefix != "gyre" || cfg.Addresses[0] != DefaultAddress || cfg.IOTimeout != DefaultIOTimeout ||
		cfg.PresenceTTL != DefaultPresenceTTL || cfg.ClusterShards != DefaultClusterShards || cfg.Logger == nil {
		t.Errorf("defaults not applied: %+v", cfg)
	}
}

func TestConfigInvalid(t *testing.T) {
	for _, tt := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"NegativeIOTimeout", Config{IOTimeout: -time.Second}, "IOTimeout"},
		{"NegativePresenceTTL", Config{PresenceTTL: -1}, "PresenceTTL"},
		{"NegativeShards", Config{PubSubShards: -1}, "PubSubShards"},
		{"NegativeClusterShards", Config{ClusterShards: -1}, "ClusterShards"},
		{"BraceInPrefix", Config{Prefix: "a{b"}, "Prefix"},
		{"SentinelWithoutMaster", Config{SentinelAddresses: []string{"127.0.0.1:26379"}}, "SentinelMasterName"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.field) || !strings.HasPrefix(err.Error(), "redis: ") {
				t.Errorf("New: %v, want an error naming %s", err, tt.field)
			}
		})
	}
}

func TestConfigAddresses(t *testing.T) {
	base := Config{User: "u", Password: "p", DB: 2, TLS: nil}
	for _, tt := range []struct {
		name     string
		addr     string
		wantAddr string
		wantUser string
		wantPass string
		wantDB   int
		wantTLS  bool
		wantErr  bool
	}{
		{"HostPort", "10.0.0.1:6380", "10.0.0.1:6380", "u", "p", 2, false, false},
		{"URL", "redis://10.0.0.1:6380", "10.0.0.1:6380", "u", "p", 2, false, false},
		{"URLOverrides", "redis://alice:secret@10.0.0.1:6380/5", "10.0.0.1:6380", "alice", "secret", 5, false, false},
		{"TLS", "rediss://10.0.0.1", "10.0.0.1:6379", "u", "p", 2, true, false},
		{"NoPort", "10.0.0.1", "", "", "", 0, false, true},
		{"BadScheme", "http://10.0.0.1:6379", "", "", "", 0, false, true},
		{"Unix", "unix:///tmp/redis.sock", "", "", "", 0, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opt, err := base.standaloneOption(tt.addr)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("standaloneOption(%q) accepted", tt.addr)
				}
				return
			}
			if err != nil {
				t.Fatalf("standaloneOption(%q): %v", tt.addr, err)
			}
			if opt.InitAddress[0] != tt.wantAddr || opt.Username != tt.wantUser || opt.Password != tt.wantPass ||
				opt.SelectDB != tt.wantDB || (opt.TLSConfig != nil) != tt.wantTLS || !opt.ForceSingleClient {
				t.Errorf("got addr %v user %q password %q db %d tls %v", opt.InitAddress, opt.Username, opt.Password, opt.SelectDB, opt.TLSConfig != nil)
			}
		})
	}
}

func TestConfigModes(t *testing.T) {
	tlsCfg := &tls.Config{ServerName: "s"}
	t.Run("DuplicateAddress", func(t *testing.T) {
		if _, err := (Config{Addresses: []string{"127.0.0.1:1", "redis://127.0.0.1:1"}}).clientOptions(); err == nil {
			t.Error("the same Redis listed twice was accepted")
		}
	})
	t.Run("Sentinel", func(t *testing.T) {
		cfg := Config{SentinelAddresses: []string{"a:1", "b:2"}, SentinelMasterName: "m", SentinelPassword: "sp", SentinelTLS: tlsCfg, Addresses: []string{"c:3"}}
		opts, err := cfg.clientOptions()
		if err != nil || len(opts) != 1 {
			t.Fatalf("clientOptions = %d options, %v", len(opts), err)
		}
		if o := opts[0]; o.Sentinel.MasterSet != "m" || o.Sentinel.Password != "sp" || o.Sentinel.TLSConfig != tlsCfg || len(o.InitAddress) != 2 {
			t.Errorf("sentinel options %+v", o.Sentinel)
		}
	})
	t.Run("Cluster", func(t *testing.T) {
		cfg := Config{ClusterAddresses: []string{"a:1"}, DB: 3}
		opts, err := cfg.clientOptions()
		if err != nil || len(opts) != 1 || opts[0].SelectDB != 0 || opts[0].InitAddress[0] != "a:1" {
			t.Errorf("cluster options %+v, %v", opts, err)
		}
	})
	t.Run("seeds copied", func(t *testing.T) {
		// rueidis shuffles the seeds it is given; engines made from one
		// Config must not shuffle the Config's own slice.
		for _, cfg := range []Config{
			{ClusterAddresses: []string{"a:1", "b:2"}},
			{SentinelAddresses: []string{"a:1", "b:2"}, SentinelMasterName: "m"},
		} {
			opts, err := cfg.clientOptions()
			if err != nil {
				t.Fatal(err)
			}
			opts[0].InitAddress[0] = "changed"
			if cfg.ClusterAddresses != nil && cfg.ClusterAddresses[0] != "a:1" || cfg.SentinelAddresses != nil && cfg.SentinelAddresses[0] != "a:1" {
				t.Errorf("the options share the Config's addresses: %+v", cfg)
			}
		}
	})
}
