package kafka_test

import (
	"context"
	"crypto/tls"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/kafka"
	"github.com/gyrehq/gyre/server/consume/kafka/kafkatest"
)

// topic is a fresh topic of the shared broker with the given partitions.
func topic(t *testing.T, partitions int) (brokers []string, name string) {
	t.Helper()
	brokers = kafkatest.Brokers(t)
	name = kafkatest.TopicName(strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	kafkatest.CreateTopic(t, brokers, name, partitions)
	return brokers, name
}

// TestOrderPerPartition: four partitions, each publishing into a channel
// of its own, run concurrently; each reaches its channel in its order,
// with queues short enough that fetching pauses and resumes all along.
func TestOrderPerPartition(t *testing.T) {
	for _, queue := range []int{-1, 5, 1000} {
		t.Run("queue"+strconv.Itoa(queue), func(t *testing.T) {
			brokers, name := topic(t, 4)
			cons := kafkatest.ConsumerConfig(unique("order"), name, brokers, name)
			cons.Kafka.PartitionQueueMaxSize = queue
			cons.Kafka.MaxPollRecords = 7
			cons.Kafka.FetchMaxWait = 50 * time.Millisecond
			n := startNode(t, cons)
			pr := kafkatest.NewProducer(t, brokers)
			const per = 400
			channels := make([]string, 4)
			var wg sync.WaitGroup
			for p := range channels {
				channels[p] = ns + ":" + unique("order")
				wg.Go(func() {
					// In several writes, so that the consumer reads while
					// the partition grows.
					for from := 0; from < per; from += 100 {
						pr.Produce(t, publishes(name, int32(p), channels[p], "", from, from+100)...)
					}
				})
			}
			wg.Wait()
			for _, ch := range channels {
				n.waitHistory(ch, want(0, per))
			}
			waitFor(t, "every record counted and committed", func() bool {
				s := n.stats()
				if s.Processed != 4*per || s.Lag != 0 {
					return false
				}
				for p := range 4 {
					if kafkatest.Committed(t, brokers, name, name, int32(p)) != per {
						return false
					}
				}
				return true
			})
			if s := n.stats(); s.Skipped != 0 || s.Retries != 0 {
				t.Fatalf("skipped %d, retries %d; want none (last error %q)", s.Skipped, s.Retries, s.Error)
			}
		})
	}
}

// TestForms: every way a record says what to run, in one partition, and
// the records that cannot run, skipped and counted.
func TestForms(t *testing.T) {
	brokers, name := topic(t, 1)
	a, b := ns+":"+unique("a"), ns+":"+unique("b")
	pr := kafkatest.NewProducer(t, brokers)
	method := func(m, value string) *kgo.Record {
		return &kgo.Record{Topic: name, Value: []byte(value), Headers: []kgo.RecordHeader{{Key: "centrifugo-method", Value: []byte(m)}}}
	}
	body := func(value string) *kgo.Record { return &kgo.Record{Topic: name, Value: []byte(value)} }
	pr.Produce(t,
		method("publish", `{"channel":"`+a+`","data":{"n":0}}`),
		body(`{"method":"publish","payload":{"channel":"`+a+`","data":{"n":1}}}`),
		method("batch", `{"commands":[{"publish":{"channel":"`+a+`","data":{"n":2}}},{"broadcast":{"channels":["`+a+`","`+b+`"],"data":{"n":3}}}]}`),
		body(`{"method":"broadcast","payload":{"channels":["`+b+`"],"data":{"n":4}}}`),
		body(`{"method":"publish","payload":`),                  // cut short
		method("publish", `{"channel":"nosuchns:x","data":{}}`), // a namespace that does not exist
		method("no_such_method", `{}`),
		method("publish", `{"channel":"`+a+`","data":{"n":5}}`),
	)
	cons := kafkatest.ConsumerConfig(unique("forms"), name, brokers, name)
	n := startNode(t, cons)
	n.waitHistory(a, []string{data(0), data(1), data(2), data(3), data(5)})
	n.waitHistory(b, []string{data(3), data(4)})
	waitFor(t, "counts", func() bool { s := n.stats(); return s.Processed == 5 && s.Skipped == 3 })
}

// TestPublicationMode: values published as they are into the channels
// of a header, with the options of the others; records whose headers
// cannot be read are skipped and counted.
func TestPublicationMode(t *testing.T) {
	brokers, name := topic(t, 1)
	a, b := ns+":"+unique("a"), ns+":"+unique("b")
	pr := kafkatest.NewProducer(t, brokers)
	pub := func(value string, headers ...string) *kgo.Record {
		r := &kgo.Record{Topic: name, Value: []byte(value)}
		for i := 0; i < len(headers); i += 2 {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: headers[i], Value: []byte(headers[i+1])})
		}
		return r
	}
	key := unique("idem")
	pr.Produce(t,
		pub(data(0), "x-chan", a, "x-tag-color", "red"),
		pub(data(1), "x-chan", a+","+b, "x-idem", key),
		pub(data(1), "x-chan", a+","+b, "x-idem", key), // the same key: published once
		pub(data(2), "x-chan", b, "x-version", "7", "x-epoch", "e1"),
		pub(data(3), "x-chan", b, "x-version", "6", "x-epoch", "e1"), // older: dropped
		pub(data(4), "x-chan", b, "x-version", "seven"),              // malformed
		pub(data(5), "x-tag-color", "blue"),                          // no channels
		pub(data(6), "x-chan", a, "x-delta", "maybe"),                // malformed
		pub(data(7), "x-chan", a, "x-delta", "false"),
	)
	cons := kafkatest.ConsumerConfig(unique("pubmode"), name, brokers, name)
	cons.Kafka.PublicationDataMode = config.PublicationHeaders{
		Enabled: true, ChannelsHeader: "x-chan", IdempotencyKeyHeader: "x-idem", DeltaHeader: "x-delta",
		VersionHeader: "x-version", VersionEpochHeader: "x-epoch", TagsHeaderPrefix: "x-tag-",
	}
	n := startNode(t, cons)
	n.waitHistory(a, []string{data(0), data(1), data(7)})
	n.waitHistory(b, []string{data(1), data(2)})
	pubs, _, err := n.s.Node().History(a, 1, nil, false)
	if err != nil || len(pubs) != 1 || pubs[0].Tags["color"] != "red" {
		t.Fatalf("first publication of %s: %v %v, want the tag color=red", a, pubs, err)
	}
	waitFor(t, "counts", func() bool { s := n.stats(); return s.Processed == 6 && s.Skipped == 3 })
}

// TestBrokerRestart: the broker is killed mid-stream and started again
// with its data: the consumer reports the failure, waits it out and runs
// every record, in order, none lost.
func TestBrokerRestart(t *testing.T) {
	b := kafkatest.Start(t)
	brokers := []string{b.Addr}
	name := kafkatest.TopicName("restart")
	kafkatest.CreateTopic(t, brokers, name, 4)
	n := startNode(t, kafkatest.ConsumerConfig(unique("restart"), name, brokers, name))
	pr := kafkatest.NewProducer(t, brokers)
	channels := make([]string, 4)
	key := unique("k")
	for p := range channels {
		channels[p] = ns + ":" + unique("restart")
		pr.Produce(t, publishes(name, int32(p), channels[p], key, 0, 300)...)
	}
	// Mid-stream: the first records ran, not all.
	waitFor(t, "a first record run", func() bool { return n.stats().Processed > 0 })
	b.Kill()
	waitFor(t, "the outage reported", func() bool { s := n.stats(); return s.SourceErrors > 0 && !s.Connected })
	b.Restart(t)
	for p := range channels {
		pr.Produce(t, publishes(name, int32(p), channels[p], key, 300, 600)...)
	}
	for _, ch := range channels {
		n.waitHistory(ch, want(0, 600))
	}
	waitFor(t, "the consumer connected again", func() bool { return n.stats().Connected })
}

// TestGroupShared: two nodes of one group share the partitions; as the
// second joins and later the first leaves, partitions move between them
// mid-stream, and each record runs once, in order per partition.
func TestGroupShared(t *testing.T) {
	brokers, name := topic(t, 4)
	pr := kafkatest.NewProducer(t, brokers)
	channels := make([]string, 4)
	for p := range channels {
		channels[p] = ns + ":" + unique("shared")
	}
	// produced records are in every partition; produceUntil adds more,
	// a few at a time, until cond holds.
	produced := 0
	produceUntil := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if produced > 50_000 {
				t.Fatalf("no %s after %d records per partition", what, produced)
			}
			for p, ch := range channels {
				pr.Produce(t, publishes(name, int32(p), ch, "", produced, produced+20)...)
			}
			produced += 20
		}
	}
	cons := func() config.Consumer {
		c := kafkatest.ConsumerConfig(unique("shared"), name, brokers, name)
		c.Kafka.MaxPollRecords = 10 // many batches, so that rebalances fall between them
		return c
	}
	// One Redis engine for both nodes: a channel's history is what both
	// published, in the order they did, and no idempotency key hides a
	// record run twice.
	redis, prefix := enginetest.SharedRedis(t), unique("shared")
	engine := func(c *config.Config) {
		c.Engine.Type = "redis"
		c.Engine.Redis.Address = []string{redis}
		c.Engine.Redis.Prefix = prefix
	}
	a := startNodeWith(t, engine, cons())
	produceUntil("record run by node a", func() bool { return a.stats().Processed > 0 })
	b := startNodeWith(t, engine, cons())
	produceUntil("record run by node b", func() bool { return b.stats().Processed > 0 })
	a.stop()
	// What a had is b's now, and more.
	more := produced + 200
	produceUntil("record produced", func() bool { return produced >= more })
	for _, ch := range channels {
		b.waitHistory(ch, want(0, produced))
	}
	ranA, ranB := a.stats().Processed, b.stats().Processed
	if ranA+ranB != uint64(4*produced) {
		t.Fatalf("%d records run (node a %d, node b %d), want %d", ranA+ranB, ranA, ranB, 4*produced)
	}
	t.Logf("%d records per partition; node a ran %d, node b %d", produced, ranA, ranB)
}

// TestShutdownCommits: a node shut down mid-stream commits exactly what
// it ran, and the next node of the group starts there.
func TestShutdownCommits(t *testing.T) {
	brokers, name := topic(t, 1)
	ch := ns + ":" + unique("s")
	const total = 3000
	kafkatest.NewProducer(t, brokers).Produce(t, publishes(name, 0, ch, "", 0, total)...)
	cons := kafkatest.ConsumerConfig(unique("shutdown"), name, brokers, name)
	n := startNode(t, cons)
	waitFor(t, "a first record run", func() bool { return n.stats().Processed > 0 })
	n.stop()
	ran := n.stats().Processed
	if got := kafkatest.Committed(t, brokers, name, name, 0); got != int64(ran) {
		t.Fatalf("committed offset %d after %d records ran", got, ran)
	}
	if ran < total {
		n2 := startNode(t, cons)
		n2.waitHistory(ch, want(int(ran), total))
	}
}

// TestLag: while the engine cannot publish, records wait: the lag counts
// them, and nothing is committed past what ran.
func TestLag(t *testing.T) {
	rs := redistest.Start(t)
	brokers, name := topic(t, 2)
	cons := kafkatest.ConsumerConfig(unique("lag"), name, brokers, name)
	ch := ns + ":" + unique("lag")
	pr := kafkatest.NewProducer(t, brokers)
	pr.Produce(t, publishes(name, 0, ch, "", 0, 5)...)

	c := config.Default()
	c.HTTPServer.Address, c.HTTPServer.Port = "127.0.0.1", 0
	c.Engine.Type = "redis"
	c.Engine.Redis.Address = []string{rs.Addr}
	c.Engine.Redis.Prefix = unique("lag")
	c.Engine.Redis.IOTimeout = 300 * time.Millisecond
	c.Channel.Namespaces = []config.Namespace{{Name: ns, ChannelOptions: config.ChannelOptions{HistorySize: 100, HistoryTTL: time.Minute}}}
	c.Consumers = []config.Consumer{cons}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	n := startNodeConfig(t, c)
	n.waitHistory(ch, want(0, 5))
	waitFor(t, "lag 0", func() bool { return n.stats().Lag == 0 })

	rs.Kill()
	pr.Produce(t, publishes(name, 0, ch, "", 5, 15)...)
	pr.Produce(t, publishes(name, 1, ch+"x", "", 0, 4)...)
	waitFor(t, "lag 14 while Redis is down", func() bool { return n.stats().Lag == 14 && n.stats().Retries > 0 })
	if got := kafkatest.Committed(t, brokers, name, name, 0); got != 5 {
		t.Fatalf("committed %d with Redis down, want 5", got)
	}
	rs.Restart()
	waitFor(t, "lag 0 once Redis is back", func() bool { return n.stats().Lag == 0 && n.stats().Processed == 19 })
}

// TestConfig: what New refuses.
func TestConfig(t *testing.T) {
	d := consume.NewDispatcher("x", "kafka", nil, nil)
	base := kafkatest.ConsumerConfig("x1", "g", []string{"127.0.0.1:9"}, "t").Kafka
	if _, err := kafka.New(base, nil, d); err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := kafka.New(base, &tls.Config{}, d); err != nil {
		t.Fatalf("New with TLS: %v", err)
	}
	for _, mech := range []string{"plain", "scram-sha-256", "scram-sha-512"} {
		c := base
		c.SASLMechanism, c.SASLUser, c.SASLPassword = mech, "u", "p"
		if _, err := kafka.New(c, nil, d); err != nil {
			t.Fatalf("New with %s: %v", mech, err)
		}
	}
	bad := []func(c *config.KafkaConsumer){
		func(c *config.KafkaConsumer) { c.SASLMechanism = "aws-msk-iam" },
		func(c *config.KafkaConsumer) { c.Brokers = nil },
		func(c *config.KafkaConsumer) { c.Topics = nil },
		func(c *config.KafkaConsumer) { c.ConsumerGroup = "" },
	}
	for i, change := range bad {
		c := base
		change(&c)
		if _, err := kafka.New(c, nil, d); err == nil {
			t.Errorf("case %d: New accepted %+v", i, c)
		}
	}
}

// TestStopWhileUnreachable: a consumer whose brokers never answer still
// stops at once when asked.
func TestStopWhileUnreachable(t *testing.T) {
	d := consume.NewDispatcher("x", "kafka", nil, nil)
	c, err := kafka.New(kafkatest.ConsumerConfig("x1", "g", []string{kafkatest.FreeAddr(t)}, "t").Kafka, nil, d)
	if err != nil {
		t.Fatal(err)
	}
	set := &consume.Set{}
	set.Add(d, c)
	set.Start()
	waitFor(t, "a failure reported", func() bool {
		s := set.Snapshots()[0]
		return s.SourceErrors > 0 && !s.Connected && s.Error != ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := set.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if s := set.Snapshots()[0]; s.Running {
		t.Fatal("still running after Stop")
	}
}

// TestMissingTopic: a topic that does not exist is reported; once it is
// created, the consumer reads it.
func TestMissingTopic(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	name := kafkatest.TopicName("missing")
	n := startNode(t, kafkatest.ConsumerConfig(unique("missing"), name, brokers, name))
	waitFor(t, "the missing topic reported", func() bool {
		s := n.stats()
		return s.SourceErrors > 0 && strings.Contains(s.Error, name)
	})
	kafkatest.CreateTopic(t, brokers, name, 2)
	ch := ns + ":" + unique("missing")
	pr := kafkatest.NewProducer(t, brokers)
	pr.Produce(t, publishes(name, 1, ch, "", 0, 10)...)
	n.waitHistory(ch, want(0, 10))
}

// TestSASL: a broker that takes SASL only, with each mechanism Gyre
// speaks; a wrong password is reported and consumes nothing.
func TestSASL(t *testing.T) {
	b := kafkatest.StartSASL(t, map[string]string{"gyre": "plain-secret"})
	b.AddSCRAMUser(t, "gyre-scram", "scram-secret")
	brokers := []string{b.Addr}
	name := kafkatest.TopicName("sasl")
	kafkatest.CreateTopic(t, brokers, name, 1, kafkatest.AdminAuth())
	pr := kafkatest.NewProducer(t, brokers, kafkatest.AdminAuth())
	cases := []struct{ mechanism, user, password string }{
		{"plain", "gyre", "plain-secret"},
		{"scram-sha-256", "gyre-scram", "scram-secret"},
		{"scram-sha-512", "gyre-scram", "scram-secret"},
	}
	for _, c := range cases {
		t.Run(c.mechanism, func(t *testing.T) {
			ch := ns + ":" + unique("sasl")
			pr.Produce(t, publishes(name, 0, ch, "", 0, 3)...)
			cons := kafkatest.ConsumerConfig(unique("sasl"), unique("sasl"), brokers, name)
			cons.Kafka.SASLMechanism, cons.Kafka.SASLUser, cons.Kafka.SASLPassword = c.mechanism, c.user, c.password
			n := startNode(t, cons)
			n.waitHistory(ch, want(0, 3))
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		cons := kafkatest.ConsumerConfig(unique("sasl"), unique("sasl"), brokers, name)
		cons.Kafka.SASLMechanism, cons.Kafka.SASLUser, cons.Kafka.SASLPassword = "scram-sha-256", "gyre-scram", "wrong"
		n := startNode(t, cons)
		waitFor(t, "the authentication failure reported", func() bool {
			s := n.stats()
			return s.SourceErrors > 0 && !s.Connected && strings.Contains(strings.ToLower(s.Error), "authentication")
		})
		if p := n.stats().Processed; p != 0 {
			t.Fatalf("processed %d records with a wrong password", p)
		}
	})
}
