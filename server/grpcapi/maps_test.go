package grpcapi_test

import (
	"testing"

	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/server/grpcapi"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// TestMapMethods: the map methods over gRPC, alone and in a batch, with
// the errors the HTTP API gives.
func TestMapMethods(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, eng enginetest.Engine) {
		e := newEnvOn(t, eng, grpcapi.Config{Key: testKey})
		ctx := e.ctx()
		pub, err := e.client.MapPublish(ctx, &apipb.MapPublishRequest{Channel: "map:m", Key: "a", Data: []byte(`{"n":1}`), Score: 3, Tags: map[string]string{"t": "x"}})
		noErr(t, "map publish", err, pub.GetError())
		if pub.GetResult().GetOffset() != 1 || pub.GetResult().GetEpoch() == "" {
			t.Fatalf("map publish: %v", pub.GetResult())
		}
		again, err := e.client.MapPublish(ctx, &apipb.MapPublishRequest{Channel: "map:m", Key: "a", Data: []byte(`2`), KeyMode: "if_new"})
		noErr(t, "map publish if_new", err, again.GetError())
		if r := again.GetResult(); !r.GetSuppressed() || r.GetSuppressReason() != "key_exists" {
			t.Fatalf("map publish if_new of an existing key: %v", r)
		}

		st, err := e.client.MapReadState(ctx, &apipb.MapReadStateRequest{Channel: "map:m", Limit: -1})
		noErr(t, "map read state", err, st.GetError())
		entries := st.GetResult().GetEntries()
		if len(entries) != 1 || entries[0].GetKey() != "a" || string(entries[0].GetData()) != `{"n":1}` ||
			entries[0].GetScore() != 3 || entries[0].GetTags()["t"] != "x" || entries[0].GetOffset() != 1 {
			t.Fatalf("state: %v", st.GetResult())
		}
		rm, err := e.client.MapRemove(ctx, &apipb.MapRemoveRequest{Channel: "map:m", Key: "a"})
		noErr(t, "map remove", err, rm.GetError())
		stream, err := e.client.MapReadStream(ctx, &apipb.MapReadStreamRequest{Channel: "map:m", Limit: -1})
		noErr(t, "map read stream", err, stream.GetError())
		changes := stream.GetResult().GetEntries()
		if len(changes) != 2 || changes[1].GetKey() != "a" || !changes[1].GetRemoved() || stream.GetResult().GetOffset() != 2 {
			t.Fatalf("stream: %v", stream.GetResult())
		}

		bad, _ := e.client.MapPublish(ctx, &apipb.MapPublishRequest{Channel: "map:m", Key: "b", Data: notJSONBytes})
		wantNotJSON(t, "map publish of bytes that are not JSON", bad.GetError(), "data")
		bad, _ = e.client.MapPublish(ctx, &apipb.MapPublishRequest{Channel: "map:m", Key: "b", KeyMode: "sometimes"})
		wantErr(t, "bad key_mode", bad.GetError(), 107)
		bad, _ = e.client.MapPublish(ctx, &apipb.MapPublishRequest{Channel: "plain:p", Key: "b"})
		wantErr(t, "stream channel", bad.GetError(), 107)
		stats, _ := e.client.MapStats(ctx, &apipb.MapStatsRequest{Channel: "nope:x"})
		wantErr(t, "unknown namespace", stats.GetError(), 102)

		b, err := e.client.Batch(ctx, &apipb.BatchRequest{Commands: []*apipb.Command{
			{MapPublish: &apipb.MapPublishRequest{Channel: "map:m", Key: "c", Data: []byte(`{}`)}},
			{MapStats: &apipb.MapStatsRequest{Channel: "map:m"}},
			{MapPublish: &apipb.MapPublishRequest{Channel: "map:m", Key: "d", Data: notJSONBytes}},
			{MapClear: &apipb.MapClearRequest{Channel: "map:m"}},
			{MapStats: &apipb.MapStatsRequest{Channel: "map:m"}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		r := b.GetReplies()
		if len(r) != 5 || r[0].GetMapPublish().GetOffset() != 3 || r[1].GetMapStats().GetNumKeys() != 1 ||
			r[3].GetMapClear() == nil || r[4].GetMapStats() == nil || r[4].GetMapStats().GetNumKeys() != 0 {
			t.Fatalf("batch replies: %v", r)
		}
		wantNotJSON(t, "batch map publish of bytes that are not JSON", r[2].GetError(), "data")
	})
}

// TestMapWithoutBroker: a node without a MapBroker answers 108.
func TestMapWithoutBroker(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{Key: testKey})
	r, err := e.client.MapPublish(e.ctx(), &apipb.MapPublishRequest{Channel: "map:m", Key: "k", Data: []byte(`1`)})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "map publish without a map broker", r.GetError(), 108)
}
