package gyre_test

import (
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
)

// BenchmarkEmulationRoundTrip sends a ping command through the emulation
// endpoint and waits for its reply on the stream, over loopback HTTP: the
// cost of one command of an emulated connection, client side included.
func BenchmarkEmulationRoundTrip(b *testing.B) {
	for _, tt := range emulatedTransports {
		b.Run(tt.name, func(b *testing.B) {
			s := newTransportServer(b, gyre.Config{}, transportOptions{})
			c := openStream(b, s.url, tt.transport, tt.proto, connectCmd(connToken(b, "bench", 0, nil)))
			c.waitReply(1)
			b.ReportAllocs()
			for b.Loop() {
				if r := c.call(&protocol.Command{Ping: &protocol.PingRequest{}}); r.Error != nil {
					b.Fatal(r.Error)
				}
			}
		})
	}
}
