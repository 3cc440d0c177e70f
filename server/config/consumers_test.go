package config

import (
	"strings"
	"testing"
)

// TestConsumersRefused: each consumer rule names its key.
func TestConsumersRefused(t *testing.T) {
	one := func(c string) string { return `{"consumers": [` + c + `]}` }
	const p = "consumers[0]"
	tests := []struct {
		name, json, path, want string
	}{
		{"bad name", one(`{"name": "a b", "type": "kafka"}`), p + ".name", "invalid consumer name"},
		{"twice", `{"consumers": [{"name": "aa", "type": "postgresql", "postgresql": {"dsn": "postgres://x/y", "outbox_table_name": "o"}}, {"name": "aa", "type": "postgresql", "postgresql": {"dsn": "postgres://x/y", "outbox_table_name": "o"}}]}`, "consumers[1].name", "defined twice"},
		{"no type", one(`{"name": "aa"}`), p + ".type", "is required"},
		{"unknown type", one(`{"name": "aa", "type": "rabbitmq"}`), p + ".type", "unknown value"},
		{"sqs enabled", one(`{"name": "aa", "enabled": true, "type": "aws_sqs"}`), p + ".type", "aws_sqs is not supported by Gyre: bridge"},
		{"pub/sub enabled", one(`{"name": "aa", "enabled": true, "type": "google_pub_sub"}`), p + ".type", "not supported"},
		{"service bus enabled", one(`{"name": "aa", "enabled": true, "type": "azure_service_bus"}`), p + ".type", "not supported"},
		{"pg dsn", one(`{"name": "aa", "type": "postgresql", "postgresql": {"outbox_table_name": "o"}}`), p + ".postgresql.dsn", "is required"},
		{"pg dsn scheme", one(`{"name": "aa", "type": "postgresql", "postgresql": {"dsn": "mysql://x/y", "outbox_table_name": "o"}}`), p + ".postgresql.dsn", "scheme"},
		{"pg table", one(`{"name": "aa", "type": "postgresql", "postgresql": {"dsn": "postgres://x/y"}}`), p + ".postgresql.outbox_table_name", "is required"},
		{"pg table injection", one(`{"name": "aa", "type": "postgresql", "postgresql": {"dsn": "postgres://x/y", "outbox_table_name": "o; drop table x"}}`), p + ".postgresql.outbox_table_name", "not a table name"},
		{"pg partitions", one(`{"name": "aa", "type": "postgresql", "postgresql": {"dsn": "postgres://x/y", "outbox_table_name": "o", "num_partitions": 0}}`), p + ".postgresql.num_partitions", ""},
		{"pg notification dsn alone", one(`{"name": "aa", "type": "postgresql", "postgresql": {"dsn": "postgres://x/y", "outbox_table_name": "o", "partition_notification_dsn": "postgres://z/y"}}`), p + ".postgresql.partition_notification_dsn", "needs partition_notification_channel"},
		{"kafka brokers", one(`{"name": "aa", "type": "kafka", "kafka": {"topics": ["t"], "consumer_group": "g"}}`), p + ".kafka.brokers", "is required"},
		{"kafka topics", one(`{"name": "aa", "type": "kafka", "kafka": {"brokers": ["b:9092"], "consumer_group": "g"}}`), p + ".kafka.topics", "is required"},
		{"kafka group", one(`{"name": "aa", "type": "kafka", "kafka": {"brokers": ["b:9092"], "topics": ["t"]}}`), p + ".kafka.consumer_group", "is required"},
		{"kafka msk iam", one(`{"name": "aa", "type": "kafka", "kafka": {"brokers": ["b:9092"], "topics": ["t"], "consumer_group": "g", "sasl_mechanism": "aws-msk-iam"}}`), p + ".kafka.sasl_mechanism", "not supported"},
		{"kafka sasl user", one(`{"name": "aa", "type": "kafka", "kafka": {"brokers": ["b:9092"], "topics": ["t"], "consumer_group": "g", "sasl_mechanism": "scram-sha-256"}}`), p + ".kafka.sasl_user", "is required"},
		{"kafka channels header", one(`{"name": "aa", "type": "kafka", "kafka": {"brokers": ["b:9092"], "topics": ["t"], "consumer_group": "g", "publication_data_mode": {"enabled": true, "channels_header": ""}}}`), p + ".kafka.publication_data_mode.channels_header", "is required"},
		{"stream keys", one(`{"name": "aa", "type": "redis_stream", "redis_stream": {"consumer_group": "g"}}`), p + ".redis_stream.streams", "is required"},
		{"stream group", one(`{"name": "aa", "type": "redis_stream", "redis_stream": {"streams": ["s"]}}`), p + ".redis_stream.consumer_group", "is required"},
		{"stream address", one(`{"name": "aa", "type": "redis_stream", "redis_stream": {"streams": ["s"], "consumer_group": "g", "address": ["not an address"]}}`), p + ".redis_stream.address[0]", "invalid address"},
		{"jetstream stream", one(`{"name": "aa", "type": "nats_jetstream", "nats_jetstream": {"durable_consumer_name": "d"}}`), p + ".nats_jetstream.stream_name", "is required"},
		{"jetstream durable", one(`{"name": "aa", "type": "nats_jetstream", "nats_jetstream": {"stream_name": "s"}}`), p + ".nats_jetstream.durable_consumer_name", "is required"},
		{"jetstream deliver policy", one(`{"name": "aa", "type": "nats_jetstream", "nats_jetstream": {"stream_name": "s", "durable_consumer_name": "d", "deliver_policy": "last"}}`), p + ".nats_jetstream.deliver_policy", "unknown value"},
		{"client tls without key", one(`{"name": "aa", "type": "nats_jetstream", "nats_jetstream": {"stream_name": "s", "durable_consumer_name": "d", "tls": {"enabled": true, "cert_pem": "x"}}}`), p + ".nats_jetstream.tls.cert_pem", "go together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateJSON(t, tt.json)
			if err == nil {
				t.Fatalf("%s is accepted", tt.json)
			}
			prefix := "config: " + tt.path + ": "
			for line := range strings.SplitSeq(err.Error(), "\n") {
				if strings.HasPrefix(line, prefix) && strings.Contains(line, tt.want) {
					return
				}
			}
			t.Errorf("Validate() = %q, want a line %q...%q", err, prefix, tt.want)
		})
	}
}

// TestConsumersAccepted: consumers as Centrifugo's documentation writes
// them, with their defaults filled in.
func TestConsumersAccepted(t *testing.T) {
	c, warnings, err := LoadBytes([]byte(`{"consumers": [
		{"name": "postgresql_outbox", "enabled": true, "type": "postgresql",
		 "postgresql": {"dsn": "postgresql://user:pass@localhost:5432/db", "outbox_table_name": "centrifugo_outbox",
		  "num_partitions": 1, "partition_select_limit": 100, "partition_poll_interval": "300ms"}},
		{"name": "my_kafka_consumer", "enabled": true, "type": "kafka",
		 "kafka": {"brokers": ["localhost:29092"], "topics": ["postgres.public.chat_cdc"], "consumer_group": "centrifugo"}},
		{"name": "my_redis_stream", "enabled": true, "type": "redis_stream",
		 "redis_stream": {"address": "redis://localhost:6379", "streams": ["s"], "consumer_group": "centrifugo"}},
		{"name": "my_jetstream", "enabled": true, "type": "nats_jetstream",
		 "nats_jetstream": {"url": "nats://localhost:4222", "stream_name": "events", "subjects": ["events.>"], "durable_consumer_name": "centrifugo"}},
		{"name": "my_sqs", "enabled": false, "type": "aws_sqs"}
	]}`), FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	k := c.Consumers[1].Kafka
	if k.MaxPollRecords != 100 || k.MethodHeader != "centrifugo-method" || k.PublicationDataMode.ChannelsHeader != "centrifugo-channels" || k.PartitionQueueMaxSize != 1000 {
		t.Errorf("kafka defaults not filled in: %+v", k)
	}
	r := c.Consumers[2].RedisStream
	if r.PayloadValue != "payload" || r.MethodValue != "method" || r.NumWorkers != 1 || r.VisibilityTimeout.Seconds() != 30 {
		t.Errorf("redis_stream defaults not filled in: %+v", r)
	}
	if j := c.Consumers[3].NatsJetStream; j.DeliverPolicy != "new" || j.MaxAckPending != 100 {
		t.Errorf("nats_jetstream defaults not filled in: %+v", j)
	}
	if pg := c.Consumers[0].Postgres; pg.PartitionSelectLimit != 100 || pg.PartitionPollInterval.Milliseconds() != 300 {
		t.Errorf("postgresql values: %+v", pg)
	}
}
