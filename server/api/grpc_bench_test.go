package api

import (
	"strings"
	"testing"

	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// BenchmarkCheckPublish is the conversion of a gRPC publish request, with
// the JSON check of its data, the cost the check adds to every gRPC
// publish: a small payload and one of 4 KiB.
func BenchmarkCheckPublish(b *testing.B) {
	for _, tc := range []struct {
		name string
		data string
	}{
		{"small", `{"text":"hello, world","n":42}`},
		{"4KiB", `{"items":[` + strings.Repeat(`{"id":12345,"name":"item","tags":["a","b"]},`, 90) + `{}]}`},
	} {
		req := &apipb.PublishRequest{Channel: "plain:bench", Data: []byte(tc.data)}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.data)))
			for b.Loop() {
				if _, err := grpcPublishRequest(req); err != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}
