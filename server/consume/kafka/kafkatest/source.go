package kafkatest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume/consumetest"
)

// Source is the Kafka source of the consumers' suite: a place is a topic
// of its own, on the shared broker or on a broker of the test's own.
type Source struct{}

var _ consumetest.Source = Source{}

// Type is "kafka".
func (Source) Type() string { return "kafka" }

// Open creates a topic with the given partitions.
func (Source) Open(t testing.TB, partitions int, private bool) consumetest.Place {
	t.Helper()
	p := &Place{Topic: TopicName("ct"), partitions: partitions}
	if private {
		p.Broker = Start(t)
		p.Brokers = []string{p.Broker.Addr}
	} else {
		p.Brokers = Brokers(t)
	}
	CreateTopic(t, p.Brokers, p.Topic, partitions)
	p.producer = NewProducer(t, p.Brokers)
	return p
}

// Place is a topic that tests consume.
type Place struct {
	Topic   string
	Brokers []string
	// Broker is the topic's broker when it is the test's own, nil on the
	// shared one.
	Broker *Broker

	partitions int
	producer   *Producer
}

var _ consumetest.Place = (*Place)(nil)

// Consumer is a consumer of the topic in consumer group group; the
// group's name is made unique to the topic, so that tests sharing a
// broker never share a group.
func (p *Place) Consumer(name, group string, publicationMode bool) (config.Consumer, bool) {
	c := ConsumerConfig(name, p.Topic+"-"+group, p.Brokers, p.Topic)
	c.Kafka.PublicationDataMode.Enabled = publicationMode
	return c, true
}

// Partitions is the topic's number of partitions.
func (p *Place) Partitions() int { return p.partitions }

// Produce stores msgs in partition part, in order: a method goes into the
// centrifugo-method header, headers into headers of their name.
func (p *Place) Produce(t testing.TB, part int, msgs ...consumetest.Msg) {
	t.Helper()
	recs := make([]*kgo.Record, len(msgs))
	for i, m := range msgs {
		r := &kgo.Record{Topic: p.Topic, Partition: int32(part), Value: m.Payload}
		if m.Method != "" {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: "centrifugo-method", Value: []byte(m.Method)})
		}
		keys := make([]string, 0, len(m.Headers))
		for k := range m.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(m.Headers[k])})
		}
		recs[i] = r
	}
	p.producer.Produce(t, recs...)
}

// Outage kills the topic's broker, waits d and starts it again with its
// data.
func (p *Place) Outage(t testing.TB, d time.Duration) {
	t.Helper()
	if p.Broker == nil {
		t.Fatal("kafkatest: Outage on the shared broker")
	}
	p.Broker.Kill()
	time.Sleep(d)
	p.Broker.Restart(t)
}

// ConsumerConfig is an enabled consumers[] entry of type kafka reading
// topics from brokers, with the default of every other key, as a config
// file would give it.
func ConsumerConfig(name, group string, brokers []string, topics ...string) config.Consumer {
	file, err := json.Marshal(map[string]any{"consumers": []any{map[string]any{
		"name": name, "enabled": true, "type": "kafka",
		"kafka": map[string]any{"brokers": brokers, "topics": topics, "consumer_group": group},
	}}})
	if err != nil {
		panic(err)
	}
	c, _, err := config.LoadBytes(file, config.FormatJSON)
	if err != nil {
		panic("kafkatest: consumer config: " + err.Error())
	}
	return c.Consumers[0]
}
