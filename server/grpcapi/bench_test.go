package grpcapi_test

import (
	"testing"

	"github.com/gyrehq/gyre/server/grpcapi"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// BenchmarkGRPCPublish is one Publish call over loopback into a channel
// without history or subscribers: client and server both count, as do
// the HTTP/2 frames; compare with BenchmarkHTTPPublish in server/api,
// which has no network.
func BenchmarkGRPCPublish(b *testing.B) {
	e := newEnv(b, grpcapi.Config{Key: testKey})
	ctx := e.ctx()
	req := &apipb.PublishRequest{Channel: "plain:bench", Data: []byte(`{"text":"hello, world","n":42}`)}
	b.ReportAllocs()
	for b.Loop() {
		r, err := e.client.Publish(ctx, req)
		if err != nil || r.GetError() != nil {
			b.Fatal(err, r.GetError())
		}
	}
}

// BenchmarkGRPCBatch10 is a Batch of ten publishes.
func BenchmarkGRPCBatch10(b *testing.B) {
	e := newEnv(b, grpcapi.Config{Key: testKey})
	ctx := e.ctx()
	req := &apipb.BatchRequest{}
	for range 10 {
		req.Commands = append(req.Commands, &apipb.Command{Publish: &apipb.PublishRequest{Channel: "plain:bench", Data: []byte(`{"text":"hello, world","n":42}`)}})
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := e.client.Batch(ctx, req)
		if err != nil || len(r.GetReplies()) != 10 {
			b.Fatal(err)
		}
	}
}
