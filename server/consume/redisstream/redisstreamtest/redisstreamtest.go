// Package redisstreamtest prepares Redis streams for tests of the
// redis_stream consumer, and is that consumer's side of the shared
// consumer suite: streams on a real Redis, entries added to them, and
// outages of a Redis of the test's own.
//
// Places share the redis-server of the test binary
// (enginetest.SharedRedis: the package's TestMain must call
// consumetest.Main or enginetest.Main, which stop it), each with stream
// keys of its own; a private place has a Redis of its own that appends
// every write to its AOF before answering, so that an outage (a kill and a
// restart) loses nothing.
package redisstreamtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume/consumetest"
)

// VisibilityTimeout is the visibility_timeout of the consumers of places:
// short, so that a node that dies leaves its streams and the entries it
// held to another soon.
const VisibilityTimeout = 2 * time.Second

// Source is the redis_stream source of the shared consumer suite.
type Source struct{}

var _ consumetest.Source = Source{}

// Type is "redis_stream".
func (Source) Type() string { return "redis_stream" }

// Open makes partitions new stream keys (one per partition) on the
// shared Redis, or on a Redis of t's own when private is set.
func (Source) Open(t testing.TB, partitions int, private bool) consumetest.Place {
	t.Helper()
	return Open(t, partitions, private)
}

// Open is Source.Open with its concrete result.
func Open(t testing.TB, partitions int, private bool) *Place {
	t.Helper()
	redistest.Require(t)
	p := &Place{}
	if private {
		p.server = redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
		p.Addr = p.server.Addr
	} else {
		p.Addr = enginetest.SharedRedis(t)
	}
	base := "gyre-test-" + sanitize(t.Name()) + "-" + random()
	for i := range max(partitions, 1) {
		p.Keys = append(p.Keys, base+"-"+strconv.Itoa(i))
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.Addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("redisstreamtest: connect to %s: %v", p.Addr, err)
	}
	p.Client = c
	t.Cleanup(func() {
		if p.server == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = c.Do(ctx, c.B().Del().Key(p.Keys...).Build()).Error()
		}
		c.Close()
	})
	return p
}

// Place is stream keys on one Redis: a place of the shared suite.
type Place struct {
	// Addr is the Redis (host:port); Keys the stream of each partition.
	Addr string
	Keys []string
	// Client reaches Addr.
	Client rueidis.Client
	// server is the Redis of a private place.
	server *redistest.Server
}

var _ consumetest.Place = (*Place)(nil)

// Consumer is a redis_stream consumer reading every stream of the place,
// with the field names of Centrifugo's defaults. It makes the group at
// the start of each stream, as a producer does that wants none of its
// entries missed: a group the consumer makes itself starts at the end.
func (p *Place) Consumer(name, group string, publicationMode bool) (config.Consumer, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, k := range p.Keys {
		err := p.Client.Do(ctx, p.Client.B().XgroupCreate().Key(k).Group(group).Id("0").Mkstream().Build()).Error()
		if err != nil && !rueidis.IsRedisBusyGroup(err) {
			panic(fmt.Sprintf("redisstreamtest: make group %s on %s: %v", group, k, err))
		}
	}
	c := defaultConsumer()
	c.Name = name
	r := &c.RedisStream
	r.Address = []string{p.Addr}
	r.Streams = slices.Clone(p.Keys)
	r.ConsumerGroup = group
	r.VisibilityTimeout = VisibilityTimeout
	r.PublicationDataMode.Enabled = publicationMode
	return c, true
}

// defaultConsumer is an enabled redis_stream consumer with every key at
// its default, as a config file naming only the type makes it.
func defaultConsumer() config.Consumer {
	c, _, err := config.LoadBytes([]byte(`{"consumers": [{"name": "x", "enabled": true, "type": "redis_stream"}]}`), config.FormatJSON)
	if err != nil {
		panic(fmt.Sprintf("redisstreamtest: default consumer: %v", err))
	}
	return c.Consumers[0]
}

// Partitions is the number of streams.
func (p *Place) Partitions() int { return len(p.Keys) }

// Produce adds msgs to the stream of partition i, in order (see Add).
func (p *Place) Produce(t testing.TB, i int, msgs ...consumetest.Msg) {
	t.Helper()
	Add(t, p.Client, p.Keys[i], msgs...)
}

// Add adds msgs to stream key through c, in order: a field method with
// the method when set, a field payload, and a field per header.
func Add(t testing.TB, c rueidis.Client, key string, msgs ...consumetest.Msg) {
	t.Helper()
	cmds := make(rueidis.Commands, 0, len(msgs))
	for _, m := range msgs {
		fv := c.B().Xadd().Key(key).Id("*").FieldValue()
		if m.Method != "" {
			fv = fv.FieldValue("method", m.Method)
		}
		fv = fv.FieldValue("payload", string(m.Payload))
		for k, v := range m.Headers {
			fv = fv.FieldValue(k, v)
		}
		cmds = append(cmds, fv.Build())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatalf("redisstreamtest: XADD to %s: %v", key, err)
		}
	}
}

// Outage kills the place's Redis, waits d and starts it again with its
// data (the AOF), then waits until it answers.
func (p *Place) Outage(t testing.TB, d time.Duration) {
	t.Helper()
	if p.server == nil {
		t.Fatal("redisstreamtest: Outage on a shared place")
	}
	p.server.Kill()
	time.Sleep(d)
	p.server.Restart()
}

func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, name)
}

func random() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// String names the place in test logs.
func (p *Place) String() string {
	return fmt.Sprintf("streams %s on %s", strings.Join(p.Keys, ","), p.Addr)
}
