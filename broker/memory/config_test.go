package memory

import (
	"strings"
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	got, err := Config{}.withDefaults()
	if err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	if got.HistoryMetaTTL != 30*24*time.Hour || got.IdempotentResultTTL != 5*time.Minute ||
		got.SweepInterval != time.Second || got.SweepBatch != 4096 || got.Shards != 64 || got.Logger == nil {
		t.Errorf("defaults = %+v", got)
	}
	pc, err := PresenceConfig{}.withDefaults()
	if err != nil {
		t.Fatalf("zero PresenceConfig: %v", err)
	}
	if pc.TTL != time.Minute || pc.SweepInterval != 5*time.Second || pc.SweepBatch != 4096 || pc.Shards != 64 {
		t.Errorf("presence defaults = %+v", pc)
	}
	mc, err := MapConfig{}.withDefaults()
	if err != nil {
		t.Fatalf("zero MapConfig: %v", err)
	}
	if mc.IdempotentResultTTL != 5*time.Minute || mc.SweepInterval != 250*time.Millisecond || mc.SweepBatch != 4096 ||
		mc.Shards != 64 || mc.IdleTTL != time.Hour || mc.Logger == nil {
		t.Errorf("map defaults = %+v", mc)
	}
}

func TestConfigInvalid(t *testing.T) {
	for _, tt := range []struct {
		field string
		cfg   Config
	}{
		{"Config.HistoryMetaTTL", Config{HistoryMetaTTL: -1}},
		{"Config.IdempotentResultTTL", Config{IdempotentResultTTL: -1}},
		{"Config.SweepInterval", Config{SweepInterval: -1}},
		{"Config.SweepBatch", Config{SweepBatch: -1}},
		{"Config.Shards", Config{Shards: -1}},
	} {
		t.Run(tt.field, func(t *testing.T) {
			_, err := NewBroker(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.field) || !strings.HasPrefix(err.Error(), "memory: ") {
				t.Errorf("NewBroker error = %v, want one naming %s", err, tt.field)
			}
		})
	}
	for _, tt := range []struct {
		field string
		cfg   PresenceConfig
	}{
		{"PresenceConfig.TTL", PresenceConfig{TTL: -1}},
		{"PresenceConfig.SweepInterval", PresenceConfig{SweepInterval: -1}},
		{"PresenceConfig.SweepBatch", PresenceConfig{SweepBatch: -1}},
		{"PresenceConfig.Shards", PresenceConfig{Shards: -1}},
	} {
		t.Run(tt.field, func(t *testing.T) {
			_, err := NewPresenceManager(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("NewPresenceManager error = %v, want one naming %s", err, tt.field)
			}
		})
	}
	for _, tt := range []struct {
		field string
		cfg   MapConfig
	}{
		{"MapConfig.IdempotentResultTTL", MapConfig{IdempotentResultTTL: -1}},
		{"MapConfig.SweepInterval", MapConfig{SweepInterval: -1}},
		{"MapConfig.IdleTTL", MapConfig{IdleTTL: -1}},
		{"MapConfig.SweepBatch", MapConfig{SweepBatch: -1}},
		{"MapConfig.Shards", MapConfig{Shards: -1}},
	} {
		t.Run(tt.field, func(t *testing.T) {
			_, err := NewMapBroker(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.field) || !strings.HasPrefix(err.Error(), "memory: ") {
				t.Errorf("NewMapBroker error = %v, want one naming %s", err, tt.field)
			}
		})
	}
}

func TestSweepBudget(t *testing.T) {
	for _, tt := range []struct{ batch, shards, want int }{
		{4096, 64, 64},
		{10, 64, 1},
		{100, 3, 34},
		{1, 1, 1},
	} {
		if got := sweepBudget(tt.batch, tt.shards); got != tt.want {
			t.Errorf("sweepBudget(%d, %d) = %d, want %d", tt.batch, tt.shards, got, tt.want)
		}
	}
}
