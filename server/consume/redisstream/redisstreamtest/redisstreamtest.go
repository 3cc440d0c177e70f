// Package redisstreamtest prepares Redis streams for tests of the
// redis_stream consumer, and is that consumer's side of the shared
// consumer suite: streams on a real Redis, entries added to them, and
// outages of a Redis of the test's own.
//
// Places share one redis-server per test binary (started at first use,
// killed with the binary; StopShared kills it sooner and removes its
// files), each with stream keys of its own; a private place has a Redis of
// its own that appends every write to its AOF before answering, so that
// an outage (a kill and a restart) loses nothing.
package redisstreamtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/server/config"
)

// VisibilityTimeout is the visibility_timeout of the consumers of places:
// short, so that entries a stopped node left are soon run by another.
const VisibilityTimeout = 2 * time.Second

// Source is the redis_stream source of the shared consumer suite.
type Source struct{}

var _ source = Source{}

// Type is "redis_stream".
func (Source) Type() string { return "redis_stream" }

// Open makes partitions new stream keys (one per partition) on the
// shared Redis, or on a Redis of t's own when private is set.
func (Source) Open(t testing.TB, partitions int, private bool) place {
	t.Helper()
	return Open(t, partitions, private)
}

// Open is Source.Open with its concrete result.
func Open(t testing.TB, partitions int, private bool) *Place {
	t.Helper()
	redistest.Require(t)
	p := &Place{private: private}
	if private {
		p.Server = redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		p.Server = shared(t)
	}
	base := "gyre-test-" + sanitize(t.Name()) + "-" + random()
	for i := range max(partitions, 1) {
		p.Keys = append(p.Keys, base+"-"+strconv.Itoa(i))
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.Server.Addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("redisstreamtest: connect to %s: %v", p.Server.Addr, err)
	}
	p.Client = c
	t.Cleanup(func() {
		if !private {
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
	// Server is the Redis; Keys the stream of each partition.
	Server *redistest.Server
	Keys   []string
	// Client reaches Server.
	Client  rueidis.Client
	private bool
}

var _ place = (*Place)(nil)

// Consumer is a redis_stream consumer reading every stream of the place,
// with the field names of Centrifugo's defaults.
func (p *Place) Consumer(name, group string, publicationMode bool) (config.Consumer, bool) {
	return config.Consumer{
		Name: name, Enabled: true, Type: "redis_stream",
		RedisStream: config.RedisStreamConsumer{
			Redis: config.Redis{
				Address: []string{p.Server.Addr}, Prefix: "gyre",
				ConnectTimeout: time.Second, IOTimeout: 4 * time.Second,
			},
			Streams:           p.Keys,
			ConsumerGroup:     group,
			VisibilityTimeout: VisibilityTimeout,
			NumWorkers:        1,
			PayloadValue:      "payload",
			MethodValue:       "method",
			PublicationDataMode: config.RedisStreamPublicationFields{
				Enabled:             publicationMode,
				ChannelsValue:       "centrifugo-channels",
				IdempotencyKeyValue: "centrifugo-idempotency-key",
				DeltaValue:          "centrifugo-delta",
				VersionValue:        "centrifugo-version",
				VersionEpochValue:   "centrifugo-version-epoch",
				TagsValuePrefix:     "centrifugo-tag-",
			},
		},
	}, true
}

// Partitions is the number of streams.
func (p *Place) Partitions() int { return len(p.Keys) }

// Produce adds msgs to the stream of partition i, in order (see Add).
func (p *Place) Produce(t testing.TB, i int, msgs ...Msg) {
	t.Helper()
	Add(t, p.Client, p.Keys[i], msgs...)
}

// Add adds msgs to stream key through c, in order: a field method with
// the method when set, a field payload, and a field per header.
func Add(t testing.TB, c rueidis.Client, key string, msgs ...Msg) {
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
	if !p.private {
		t.Fatal("redisstreamtest: Outage on a shared place")
	}
	p.Server.Kill()
	time.Sleep(d)
	p.Server.Restart()
}

var (
	sharedOnce sync.Once
	sharedSrv  *redistest.Server
	sharedDir  string
	sharedErr  error
)

// shared is the Redis the places of the test binary share.
func shared(t testing.TB) *redistest.Server {
	t.Helper()
	sharedOnce.Do(func() {
		sharedDir, sharedErr = os.MkdirTemp("", "gyre-redisstreamtest-")
		if sharedErr == nil {
			sharedSrv, sharedErr = redistest.StartShared(sharedDir)
		}
	})
	if sharedErr != nil {
		t.Fatalf("redisstreamtest: shared redis-server: %v", sharedErr)
	}
	return sharedSrv
}

// StopShared kills the shared Redis, if one started, and removes its
// files; for TestMain, after the tests ran.
func StopShared() {
	if sharedSrv != nil {
		sharedSrv.Kill()
	}
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
	}
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
	return fmt.Sprintf("streams %s on %s", strings.Join(p.Keys, ","), p.Server.Addr)
}
