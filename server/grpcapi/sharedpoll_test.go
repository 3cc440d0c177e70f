package grpcapi_test

import (
	"testing"

	"github.com/gyrehq/gyre/server/grpcapi"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// TestSharedPollPublish: shared_poll_publish over gRPC, alone and in a
// batch (field 42), with the errors the HTTP API gives; publish refuses
// shared-poll channels.
func TestSharedPollPublish(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{Key: testKey})
	ctx := e.ctx()
	r, err := e.client.SharedPollPublish(ctx, &apipb.SharedPollPublishRequest{Channel: "poll:p", Key: "k", Data: []byte(`{"v":1}`), Version: 1, Epoch: "e"})
	noErr(t, "shared poll publish", err, r.GetError())
	if r.GetResult() == nil {
		t.Fatal("shared poll publish: no result")
	}
	r, err = e.client.SharedPollPublish(ctx, &apipb.SharedPollPublishRequest{Channel: "poll:p", Key: "k", B64Data: "AQID", Version: 2})
	noErr(t, "shared poll publish of binary data in b64data", err, r.GetError())

	for _, tt := range []struct {
		name string
		req  *apipb.SharedPollPublishRequest
		code uint32
	}{
		{"no channel", &apipb.SharedPollPublishRequest{Key: "k", Version: 1}, 107},
		{"no key", &apipb.SharedPollPublishRequest{Channel: "poll:p", Version: 1}, 107},
		{"no version", &apipb.SharedPollPublishRequest{Channel: "poll:p", Key: "k"}, 107},
		{"data not JSON", &apipb.SharedPollPublishRequest{Channel: "poll:p", Key: "k", Version: 1, Data: notJSONBytes}, 107},
		{"bad b64data", &apipb.SharedPollPublishRequest{Channel: "poll:p", Key: "k", Version: 1, B64Data: "%%"}, 107},
		{"stream channel", &apipb.SharedPollPublishRequest{Channel: "plain:p", Key: "k", Version: 1}, 107},
		{"unknown namespace", &apipb.SharedPollPublishRequest{Channel: "nope:p", Key: "k", Version: 1}, 102},
		{"publish not enabled", &apipb.SharedPollPublishRequest{Channel: "rpoll:p", Key: "k", Version: 1}, 108},
	} {
		r, err := e.client.SharedPollPublish(ctx, tt.req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		wantErr(t, tt.name, r.GetError(), tt.code)
	}

	p, err := e.client.Publish(ctx, &apipb.PublishRequest{Channel: "poll:p", Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "publish into a shared-poll channel", p.GetError(), 107)

	b, err := e.client.Batch(ctx, &apipb.BatchRequest{Commands: []*apipb.Command{
		{SharedPollPublish: &apipb.SharedPollPublishRequest{Channel: "poll:p", Key: "k", Data: []byte(`1`), Version: 3}},
		{SharedPollPublish: &apipb.SharedPollPublishRequest{Channel: "rpoll:p", Key: "k", Data: []byte(`1`), Version: 3}},
		{Publish: &apipb.PublishRequest{Channel: "poll:p", Data: []byte(`{}`)}},
		{Publish: &apipb.PublishRequest{Channel: "plain:p", Data: []byte(`{}`)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	replies := b.GetReplies()
	if len(replies) != 4 || replies[0].GetError() != nil || replies[0].GetSharedPollPublish() == nil || replies[3].GetError() != nil {
		t.Fatalf("batch replies: %v", replies)
	}
	wantErr(t, "batch: publish not enabled", replies[1].GetError(), 108)
	wantErr(t, "batch: publish into a shared-poll channel", replies[2].GetError(), 107)
}
