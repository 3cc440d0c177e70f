package redisstream_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/redisstream/redisstreamtest"
)

// TestMeasureThroughput measures how long one node takes to publish
// 100,000 entries added beforehand to one stream (num_workers 1), each
// a publish into one of 100 channels. It runs only with
// GYRE_MEASURE_REDISSTREAM=1 (memory broker) or =redis (a Redis broker on
// a second redis-server):
//
//	GYRE_MEASURE_REDISSTREAM=1 go test -run TestMeasureThroughput -v ./server/consume/redisstream/
func TestMeasureThroughput(t *testing.T) {
	mode := os.Getenv("GYRE_MEASURE_REDISSTREAM")
	if mode == "" {
		t.Skip("set GYRE_MEASURE_REDISSTREAM=1 (or redis) to measure")
	}
	const total = 100_000
	p := redisstreamtest.Open(t, 1, false)
	makeGroup(t, p.Client, p.Keys[0], "g")
	for i := 0; i < total; i += 1000 {
		msgs := make([]consumetest.Msg, 0, 1000)
		for j := i; j < i+1000; j++ {
			msgs = append(msgs, publishMsg(fmt.Sprintf("m%d", j%100), j))
		}
		p.Produce(t, 0, msgs...)
	}
	cfg := gyre.Config{Channels: gyre.ChannelConfig{
		WithoutNamespace: gyre.ChannelOptions{HistorySize: 10_000, HistoryTTL: time.Hour},
	}}
	if mode == "redis" {
		srv := redistest.Start(t)
		e, err := redis.New(redis.Config{Addresses: []string{srv.Addr}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		cfg.Broker, cfg.PresenceManager = e.Broker(), e.PresenceManager()
	}
	n, err := gyre.NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Shutdown(context.Background()) })
	c, _ := p.Consumer("measure", "g", false)
	began := time.Now()
	r := start(t, api.NewExecutor(n, api.Config{}), c)
	for r.snapshot().Processed < total {
		time.Sleep(time.Millisecond)
	}
	took := time.Since(began)
	r.stop()
	t.Logf("%d entries published by one node (%s broker) in %v: %.0f entries/s",
		total, map[bool]string{true: "Redis", false: "memory"}[mode == "redis"], took.Round(time.Millisecond), total/took.Seconds())
}
