package kafkatest

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// opTimeout bounds one admin request or produce of a test.
const opTimeout = time.Minute

var topicSeq atomic.Int64

// TopicName is a topic name no other test uses, on a broker shared by
// test binaries that run at once (the process id tells them apart).
func TopicName(what string) string {
	return fmt.Sprintf("gyre-%s-%d-%d", what, os.Getpid(), topicSeq.Add(1))
}

// CreateTopic creates topic with the given number of partitions on the
// brokers, replication factor 1, and waits until every partition has a
// leader.
func CreateTopic(t testing.TB, brokers []string, topic string, partitions int, opts ...kgo.Opt) {
	t.Helper()
	cl := newClient(t, brokers, opts...)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("kafkatest: create topic %s: %v", topic, err)
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) == partitions && leaders(td) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("kafkatest: topic %s has no leader for every partition: %v", topic, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func leaders(td kadm.TopicDetail) bool {
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}

// Producer writes records into chosen partitions.
type Producer struct {
	cl *kgo.Client
}

// NewProducer is a producer to brokers, closed when the test ends; opts
// add to its options (authentication).
func NewProducer(t testing.TB, brokers []string, opts ...kgo.Opt) *Producer {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Millisecond),
		// Through a broker's restart: retry until it is back.
		kgo.RecordDeliveryTimeout(opTimeout),
	}, opts...)...)
	if err != nil {
		t.Fatalf("kafkatest: producer: %v", err)
	}
	t.Cleanup(cl.Close)
	return &Producer{cl: cl}
}

// Produce stores recs (their Topic and Partition set) and returns once
// the broker has them all, in order per partition.
func (p *Producer) Produce(t testing.TB, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := p.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("kafkatest: produce: %v", err)
	}
}

// Client is a franz-go client of brokers, closed when the test ends.
func Client(t testing.TB, brokers []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl := newClient(t, brokers, opts...)
	t.Cleanup(cl.Close)
	return cl
}

func newClient(t testing.TB, brokers []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		t.Fatalf("kafkatest: client: %v", err)
	}
	return cl
}

// Committed is the offset the group committed for partition p of topic,
// -1 when none.
func Committed(t testing.TB, brokers []string, group, topic string, p int32) int64 {
	t.Helper()
	cl := newClient(t, brokers)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("kafkatest: offsets of group %s: %v", group, err)
	}
	o, ok := offs.Lookup(topic, p)
	if !ok {
		return -1
	}
	if o.Err != nil {
		t.Fatalf("kafkatest: offset of group %s, %s/%d: %v", group, topic, p, o.Err)
	}
	return o.At
}
