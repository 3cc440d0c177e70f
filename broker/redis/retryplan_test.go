package redis

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/redis/rueidis"
)

// TestRetryPlan: which calls of a pipeline go again, from real Redis
// replies. A call that met NOSCRIPT goes again unless a later call of its
// channel ran in the meantime (it would take an offset after that one);
// a call that failed on the connection goes again only with an
// idempotency key and while the context is live.
func TestRetryPlan(t *testing.T) {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redistest.Start(t).Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	ran := c.Do(ctx, c.B().Eval().Script("return 1").Numkeys(0).Build())
	failed := c.Do(ctx, c.B().Eval().Script("return redis.error_reply('ERR no')").Numkeys(0).Build())
	noScript := c.Do(ctx, c.B().Evalsha().Sha1("0000000000000000000000000000000000000000").Numkeys(0).Build())
	if !isNoScript(noScript.Error()) || ran.Error() != nil || failed.Error() == nil {
		t.Fatalf("replies: %v, %v, %v", noScript.Error(), ran.Error(), failed.Error())
	}
	broken := rueidis.NewErrorResult(errors.New("connection reset"))

	call := func(channel, key string) *publishCall {
		return &publishCall{item: &broker.PublishItem{Channel: channel, Opts: broker.PublishOptions{IdempotencyKey: key}}}
	}
	for _, tt := range []struct {
		name    string
		calls   []*publishCall
		results []rueidis.RedisResult
		expired bool
		want    []bool
	}{
		{"all missing", []*publishCall{call("x", ""), call("x", ""), call("y", "")},
			[]rueidis.RedisResult{noScript, noScript, noScript}, false, []bool{true, true, true}},
		{"a later call of the channel ran", []*publishCall{call("x", ""), call("x", ""), call("y", "")},
			[]rueidis.RedisResult{noScript, ran, noScript}, false, []bool{false, false, true}},
		{"a later call of the channel failed in the script", []*publishCall{call("x", ""), call("x", "")},
			[]rueidis.RedisResult{noScript, failed}, false, []bool{false, false}},
		{"a later call of another channel ran", []*publishCall{call("x", ""), call("y", ""), call("x", "")},
			[]rueidis.RedisResult{noScript, ran, noScript}, false, []bool{true, false, true}},
		{"an earlier call of the channel ran", []*publishCall{call("x", ""), call("x", "")},
			[]rueidis.RedisResult{ran, noScript}, false, []bool{false, true}},
		{"connection broken", []*publishCall{call("x", "k1"), call("x", ""), call("y", "k2")},
			[]rueidis.RedisResult{broken, broken, broken}, false, []bool{true, false, true}},
		{"connection broken, context expired", []*publishCall{call("x", "k1")},
			[]rueidis.RedisResult{broken}, true, []bool{false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			retry, again := retryPlan(tt.calls, tt.results, tt.expired)
			n := 0
			for _, r := range tt.want {
				if r {
					n++
				}
			}
			if !slices.Equal(retry, tt.want) || again != n {
				t.Fatalf("retry %v (%d), want %v (%d)", retry, again, tt.want, n)
			}
		})
	}
}
