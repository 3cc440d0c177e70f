package gyre

import (
	"testing"
	"time"

	"github.com/gyrehq/gyre/protocol"
)

// BenchmarkCommandRateLimit measures what the limits add to each command:
// "off" is the nil check every command pays, "on" a connection bucket and
// a user bucket, both with tokens to spare.
func BenchmarkCommandRateLimit(b *testing.B) {
	cmd := &protocol.Command{Id: 1, Publish: &protocol.PublishRequest{Channel: "chat:room"}}
	b.Run("off", func(b *testing.B) {
		r, err := newRateLimits(RateLimitConfig{})
		if err != nil || r != nil {
			b.Fatal("no limits must give no limiter", err)
		}
		var cl *clientLimits
		b.ReportAllocs()
		for b.Loop() {
			if cl != nil && !cl.allow(cmd) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("on", func(b *testing.B) {
		var now time.Duration
		many := []RateBucket{{Interval: time.Nanosecond, Rate: 1 << 30}}
		r, err := newRateLimits(RateLimitConfig{
			Client: CommandRates{Publish: many, Total: many},
			User:   CommandRates{Default: many},
			Now:    func() time.Duration { now++; return now },
		})
		if err != nil {
			b.Fatal(err)
		}
		cl := r.forClient("42")
		b.ReportAllocs()
		for b.Loop() {
			if !cl.allow(cmd) {
				b.Fatal("refused")
			}
		}
	})
}
