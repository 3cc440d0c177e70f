package cluster_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	gyreconfig "github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/jetstream/jetstreamtest"
	"github.com/gyrehq/gyre/server/consume/kafka/kafkatest"
	"github.com/gyrehq/gyre/server/consume/pgoutbox/pgtest"
	"github.com/gyrehq/gyre/server/consume/redisstream/redisstreamtest"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

// consumerMap is the consumers[] entry c as a config file writes it.
func consumerMap(t testing.TB, c gyreconfig.Consumer) map[string]any {
	t.Helper()
	full := gyreconfig.Default()
	full.Consumers = []gyreconfig.Consumer{c}
	b, err := full.MarshalNonDefault("json")
	if err != nil {
		t.Fatalf("encode consumer: %v", err)
	}
	var m struct {
		Consumers []map[string]any `json:"consumers"`
	}
	if err := json.Unmarshal(b, &m); err != nil || len(m.Consumers) != 1 {
		t.Fatalf("decode consumer from %s: %v", b, err)
	}
	return m.Consumers[0]
}

// TestConsumerNodeKilled runs testConsumerNodeKilled for every consumer
// type.
func TestConsumerNodeKilled(t *testing.T) {
	sources := []consumetest.Source{pgtest.Source(), kafkatest.Source{}, redisstreamtest.Source{}, jetstreamtest.Source{}}
	for _, src := range sources {
		t.Run(src.Type(), func(t *testing.T) {
			t.Parallel()
			testConsumerNodeKilled(t, src)
		})
	}
}

// testConsumerNodeKilled kills, with SIGKILL, a node in the middle of
// consuming a stream of publishes that carry idempotency keys. A second
// node of the same group gets what the first ran but did not
// acknowledge, runs it again, and the broker drops the duplicates: the
// channel's history holds every message once, in the order produced.
func testConsumerNodeKilled(t *testing.T, src consumetest.Source) {
	const (
		channel = "chat:consumed"
		total   = 20000
	)
	srv := redistest.Start(t)
	// A place of the test's own: the test binary shares no servers.
	place := src.Open(t, 1, true)
	group := "killed-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cons, _ := place.Consumer("killed", group, false)
	cfg := func(name string) gyreproc.Config {
		c := nodeConfig(name, redisAt(srv.Addr))
		return c.Set("consumers", []any{consumerMap(t, cons)})
	}
	msgs := make([]consumetest.Msg, total)
	for i := range msgs {
		payload := fmt.Sprintf(`{"channel":%q,"data":{"n":%d},"idempotency_key":"k%d"}`, channel, i, i)
		msgs[i] = consumetest.Msg{Method: "publish", Payload: []byte(payload)}
	}
	place.Produce(t, 0, msgs...)

	a := gyreproc.Start(t, "A", cfg("A"))
	var seen uint64
	eventually(t, "2,000 messages run by node A", 2*time.Minute, func() bool {
		seen, _ = streamTop(t, a, channel)
		return seen >= 2000
	})
	a.Kill()

	b := gyreproc.Start(t, "B", cfg("B"))
	eventually(t, "every message run", 3*time.Minute, func() bool {
		top, _ := streamTop(t, b, channel)
		return top >= total
	})
	got, _ := historyNumbers(t, b, channel)
	if len(got) != total {
		t.Fatalf("history holds %d publications, want %d", len(got), total)
	}
	if !consumetest.OrderedAcrossNodes(place) {
		// What the dead node held comes back to the other after the
		// ack wait, behind newer messages: each once, in some order.
		seen := make(map[int]bool, total)
		for _, n := range got {
			seen[n] = true
		}
		if len(seen) != total {
			t.Fatalf("history holds %d distinct messages of %d: some were lost or duplicated", len(seen), total)
		}
		return
	}
	for off := uint64(1); off <= total; off++ {
		if n, ok := got[off]; !ok || n != int(off-1) {
			t.Fatalf("offset %d holds %d (present %v), want %d: a message was lost, duplicated or reordered", off, n, ok, off-1)
		}
	}
	if seen >= total {
		t.Fatalf("node A ran every message before it was killed: the test proves nothing; produce more")
	}
	t.Logf("node A killed after at least %d messages published; node B ran the rest", seen)
}
