package config

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Consumer reads server API commands from an external system (a
// PostgreSQL outbox table, Kafka topics, Redis streams, a JetStream
// stream) and runs them on the node, as the HTTP API would.
type Consumer struct {
	Name    string `key:"name" help:"Unique name of the consumer: at least two of letters, digits, '-', '_' and '.'. It labels the consumer's metrics and log lines."`
	Enabled bool   `key:"enabled" help:"Run the consumer; a consumer that is not enabled is only checked."`
	Type    string `key:"type" enum:"postgresql,kafka,redis_stream,nats_jetstream,google_pub_sub,aws_sqs,azure_service_bus" help:"What to consume: postgresql (an outbox table), kafka, redis_stream or nats_jetstream. google_pub_sub, aws_sqs and azure_service_bus are Centrifugo's and refused when enabled."`

	Postgres      PostgresConsumer      `key:"postgresql" help:"The outbox table of a postgresql consumer."`
	Kafka         KafkaConsumer         `key:"kafka" help:"The topics of a kafka consumer."`
	RedisStream   RedisStreamConsumer   `key:"redis_stream" help:"The streams of a redis_stream consumer."`
	NatsJetStream NatsJetStreamConsumer `key:"nats_jetstream" help:"The stream of a nats_jetstream consumer."`

	GooglePubSub    Unimplemented `key:"google_pub_sub" help:"Google Cloud Pub/Sub consumer." unsupported:"Gyre does not consume Google Cloud Pub/Sub; bridge the subscription into Kafka, Redis Streams, JetStream or a PostgreSQL outbox table and consume that."`
	AwsSqs          Unimplemented `key:"aws_sqs" help:"AWS SQS consumer." unsupported:"Gyre does not consume AWS SQS; bridge the queue into Kafka, Redis Streams, JetStream or a PostgreSQL outbox table and consume that."`
	AzureServiceBus Unimplemented `key:"azure_service_bus" help:"Azure Service Bus consumer." unsupported:"Gyre does not consume Azure Service Bus; bridge the queue into Kafka, Redis Streams, JetStream or a PostgreSQL outbox table and consume that."`
}

// PostgresConsumer reads an outbox table: rows of (id, method, payload,
// partition) that transactions insert next to their own changes.
type PostgresConsumer struct {
	DSN                          string        `key:"dsn" help:"PostgreSQL connection string, postgres://user:password@host:5432/database."`
	OutboxTableName              string        `key:"outbox_table_name" help:"The outbox table: id BIGSERIAL PRIMARY KEY, method text, payload JSONB, partition INTEGER default 0, created_at timestamptz."`
	NumPartitions                int           `key:"num_partitions" default:"1" min:"1" max:"1024" help:"Partitions of the table (0 to num_partitions-1), each read in id order by one node at a time, all of them concurrently."`
	PartitionSelectLimit         int           `key:"partition_select_limit" default:"100" min:"1" max:"100000" help:"Most rows read, run and deleted at once per partition."`
	PartitionPollInterval        time.Duration `key:"partition_poll_interval" default:"300ms" min:"1ms" help:"How long a partition with no rows waits before it is read again (sooner on a notification)."`
	PartitionNotificationChannel string        `key:"partition_notification_channel" help:"A channel to LISTEN on: a NOTIFY on it with a partition number as payload has that partition read at once."`
	PartitionNotificationDSN     string        `key:"partition_notification_dsn" help:"Connection string for LISTEN alone, when dsn goes through a pooler (PgBouncer in transaction mode) that cannot LISTEN; empty uses dsn."`
	TLS                          TLS           `key:"tls" help:"TLS towards PostgreSQL."`
	UseTryLock                   bool          `key:"use_try_lock" help:"Skip a partition that another node holds (pg_try_advisory_xact_lock) rather than wait for it (pg_advisory_xact_lock)."`
}

// KafkaConsumer reads Kafka topics as a member of a consumer group.
type KafkaConsumer struct {
	Brokers               []string           `key:"brokers" help:"Seed brokers, host:port."`
	Topics                []string           `key:"topics" help:"Topics to consume."`
	ConsumerGroup         string             `key:"consumer_group" help:"Consumer group: the nodes of one group share the topics' partitions."`
	MaxPollRecords        int                `key:"max_poll_records" default:"100" min:"1" max:"100000" help:"Most records taken per poll, and run as one batch per partition."`
	FetchMaxBytes         int                `key:"fetch_max_bytes" min:"0" help:"Most bytes a fetch may return; 0 is the client's default (50 MB)."`
	FetchMaxWait          time.Duration      `key:"fetch_max_wait" default:"500ms" min:"1ms" help:"Longest a broker holds a fetch waiting for records."`
	FetchReadUncommitted  bool               `key:"fetch_read_uncommitted" help:"Read records of transactions not committed yet (read_uncommitted); by default only committed ones."`
	PartitionQueueMaxSize int                `key:"partition_queue_max_size" default:"1000" min:"-1" help:"Records waiting per partition past which fetching from it pauses until they are run; -1 pauses after every poll."`
	DialTimeout           time.Duration      `key:"dial_timeout" default:"3s" min:"1ms" help:"Longest a connection to one broker may take."`
	TLS                   TLS                `key:"tls" help:"TLS towards Kafka."`
	SASLMechanism         string             `key:"sasl_mechanism" enum:",plain,scram-sha-256,scram-sha-512,aws-msk-iam" help:"SASL authentication: plain, scram-sha-256 or scram-sha-512; empty for none. aws-msk-iam is Centrifugo's and refused."`
	SASLUser              string             `key:"sasl_user" help:"SASL user."`
	SASLPassword          string             `key:"sasl_password" help:"SASL password."`
	AssumeRoleARN         Unimplemented      `key:"assume_role_arn" help:"AWS role for MSK IAM authentication." unsupported:"Gyre has no AWS MSK IAM authentication; use SASL/SCRAM."`
	InstanceID            string             `key:"instance_id" help:"Static group membership: a stable id per node (a pod name), so that a restart within the session timeout keeps its partitions without a rebalance."`
	MethodHeader          string             `key:"method_header" default:"centrifugo-method" help:"Header naming the API method; the value is then the method's request. Without the header, the value is {\"method\": ..., \"payload\": ...}."`
	PublicationDataMode   PublicationHeaders `key:"publication_data_mode" help:"Publish record values as they are into the channels a header names, rather than run API commands."`
}

// PublicationHeaders are the headers of publication data mode, for the
// sources whose messages have headers (Kafka, JetStream).
type PublicationHeaders struct {
	Enabled              bool   `key:"enabled" help:"A message's value (a Kafka record's value, a JetStream message's body) is the data of a publication into the channels of channels_header (a broadcast when several)."`
	ChannelsHeader       string `key:"channels_header" default:"centrifugo-channels" help:"Header with the channels, separated by commas."`
	IdempotencyKeyHeader string `key:"idempotency_key_header" default:"centrifugo-idempotency-key" help:"Header with the publication's idempotency key."`
	DeltaHeader          string `key:"delta_header" default:"centrifugo-delta" help:"Header that is true to send the publication as a delta."`
	VersionHeader        string `key:"version_header" default:"centrifugo-version" help:"Header with the publication's version (a number)."`
	VersionEpochHeader   string `key:"version_epoch_header" default:"centrifugo-version-epoch" help:"Header with the epoch of the version."`
	TagsHeaderPrefix     string `key:"tags_header_prefix" default:"centrifugo-tag-" help:"Headers starting with this prefix are tags: the rest of the name is the tag's key."`
}

// RedisStreamConsumer reads Redis streams as a member of a consumer
// group.
type RedisStreamConsumer struct {
	Redis
	Streams             []string                     `key:"streams" help:"Stream keys to consume."`
	ConsumerGroup       string                       `key:"consumer_group" help:"Consumer group, made at the end of each stream when missing; the nodes of one group share the entries."`
	VisibilityTimeout   time.Duration                `key:"visibility_timeout" default:"30s" min:"1ms" help:"How long an entry taken but not acknowledged (its node died) waits before another consumer of the group claims it."`
	NumWorkers          int                          `key:"num_workers" default:"1" min:"1" max:"1024" help:"Readers per stream. With more than one, entries of a stream may run out of order."`
	PayloadValue        string                       `key:"payload_value" default:"payload" help:"Field holding the payload."`
	MethodValue         string                       `key:"method_value" default:"method" help:"Field naming the API method; the payload is then the method's request. Without it, the payload is {\"method\": ..., \"payload\": ...}."`
	PublicationDataMode RedisStreamPublicationFields `key:"publication_data_mode" help:"Publish payloads as they are into the channels a field names, rather than run API commands."`
}

// RedisStreamPublicationFields are the fields of the Redis stream
// consumer's publication data mode.
type RedisStreamPublicationFields struct {
	Enabled             bool   `key:"enabled" help:"An entry's payload is the data of a publication into the channels of channels_value (a broadcast when several)."`
	ChannelsValue       string `key:"channels_value" default:"centrifugo-channels" help:"Field with the channels, separated by commas."`
	IdempotencyKeyValue string `key:"idempotency_key_value" default:"centrifugo-idempotency-key" help:"Field with the publication's idempotency key."`
	DeltaValue          string `key:"delta_value" default:"centrifugo-delta" help:"Field that is true to send the publication as a delta."`
	VersionValue        string `key:"version_value" default:"centrifugo-version" help:"Field with the publication's version (a number)."`
	VersionEpochValue   string `key:"version_epoch_value" default:"centrifugo-version-epoch" help:"Field with the epoch of the version."`
	TagsValuePrefix     string `key:"tags_value_prefix" default:"centrifugo-tag-" help:"Fields starting with this prefix are tags: the rest of the name is the tag's key."`
}

// NatsJetStreamConsumer reads a JetStream stream through a durable
// consumer.
type NatsJetStreamConsumer struct {
	URL                 string             `key:"url" default:"nats://127.0.0.1:4222" help:"NATS server URL."`
	CredentialsFile     string             `key:"credentials_file" help:"NATS credentials file; it takes precedence over username, password and token."`
	Username            string             `key:"username" help:"NATS user."`
	Password            string             `key:"password" help:"NATS password."`
	Token               string             `key:"token" help:"NATS token, when neither credentials_file nor username is set."`
	StreamName          string             `key:"stream_name" help:"The stream to consume."`
	UseExistingConsumer bool               `key:"use_existing_consumer" help:"Bind to the durable consumer durable_consumer_name as it is (it must exist); subjects, deliver_policy and max_ack_pending are then not used."`
	Subjects            []string           `key:"subjects" help:"Subjects of the stream to consume; empty takes them all."`
	DurableConsumerName string             `key:"durable_consumer_name" help:"The durable consumer, made or updated when missing; the nodes using one share its messages."`
	DeliverPolicy       string             `key:"deliver_policy" default:"new" enum:"new,all" help:"Where a new durable consumer starts: new messages only, or all the stream holds."`
	MaxAckPending       int                `key:"max_ack_pending" default:"100" min:"1" help:"Most messages delivered and not acknowledged at once."`
	MethodHeader        string             `key:"method_header" default:"centrifugo-method" help:"Header naming the API method; the body is then the method's request. Without it, the body is {\"method\": ..., \"payload\": ...}."`
	PublicationDataMode PublicationHeaders `key:"publication_data_mode" help:"Publish message bodies as they are into the channels a header names, rather than run API commands."`
	TLS                 TLS                `key:"tls" help:"TLS towards NATS."`
}

// ConsumerTypes are the consumer types Gyre runs.
var ConsumerTypes = []string{"postgresql", "kafka", "redis_stream", "nats_jetstream"}

// consumers checks each consumer: its name, and for an enabled one what
// its type needs. Consumers that are not enabled are checked as well, so
// that turning one on does not reveal a mistake at the next start.
func (v *validator) consumers(c *Config) {
	named := map[string]bool{}
	for i := range c.Consumers {
		cs := &c.Consumers[i]
		path := "consumers[" + strconv.Itoa(i) + "]"
		switch {
		case !namespaceName.MatchString(cs.Name):
			v.fail(path+".name", "invalid consumer name %q: must match %s", cs.Name, namespaceName)
		case named[cs.Name]:
			v.fail(path+".name", "consumer %q is defined twice", cs.Name)
		}
		named[cs.Name] = true
		switch cs.Type {
		case "":
			v.fail(path+".type", "is required: one of %s", strings.Join(ConsumerTypes, ", "))
		case "postgresql":
			v.postgresConsumer(path+".postgresql", &cs.Postgres)
		case "kafka":
			v.kafkaConsumer(path+".kafka", &cs.Kafka)
		case "redis_stream":
			v.redisStreamConsumer(path+".redis_stream", &cs.RedisStream)
		case "nats_jetstream":
			v.jetStreamConsumer(path+".nats_jetstream", &cs.NatsJetStream)
		default:
			if cs.Enabled {
				// Messages would wait in the queue unread: refuse rather
				// than start and consume nothing.
				v.fail(path+".type", "%s is not supported by Gyre: bridge it into kafka, redis_stream, nats_jetstream or a postgresql outbox table and consume that", cs.Type)
			}
		}
	}
}

func (v *validator) postgresConsumer(path string, p *PostgresConsumer) {
	if p.DSN == "" {
		v.fail(path+".dsn", "is required")
	} else if u, err := url.Parse(p.DSN); err == nil && u.Scheme != "" && u.Scheme != "postgres" && u.Scheme != "postgresql" {
		v.fail(path+".dsn", "scheme %q: want postgres:// or postgresql://", u.Scheme)
	}
	if p.OutboxTableName == "" {
		v.fail(path+".outbox_table_name", "is required")
	} else if !sqlName.MatchString(p.OutboxTableName) {
		v.fail(path+".outbox_table_name", "%q is not a table name (letters, digits, _, optionally schema.table)", p.OutboxTableName)
	}
	if p.PartitionNotificationDSN != "" && p.PartitionNotificationChannel == "" {
		v.fail(path+".partition_notification_dsn", "needs partition_notification_channel")
	}
	v.clientTLS(path+".tls", &p.TLS)
}

func (v *validator) kafkaConsumer(path string, k *KafkaConsumer) {
	if len(k.Brokers) == 0 {
		v.fail(path+".brokers", "is required")
	}
	if len(k.Topics) == 0 {
		v.fail(path+".topics", "is required")
	}
	if slices.Contains(k.Topics, "") {
		v.fail(path+".topics", "an empty topic")
	}
	if k.ConsumerGroup == "" {
		v.fail(path+".consumer_group", "is required")
	}
	switch k.SASLMechanism {
	case "aws-msk-iam":
		v.fail(path+".sasl_mechanism", "aws-msk-iam is not supported by Gyre: use scram-sha-256 or scram-sha-512")
	case "plain", "scram-sha-256", "scram-sha-512":
		if k.SASLUser == "" {
			v.fail(path+".sasl_user", "is required with sasl_mechanism %s", k.SASLMechanism)
		}
	}
	if k.PublicationDataMode.Enabled && k.PublicationDataMode.ChannelsHeader == "" {
		v.fail(path+".publication_data_mode.channels_header", "is required in publication data mode")
	}
	v.clientTLS(path+".tls", &k.TLS)
}

func (v *validator) redisStreamConsumer(path string, r *RedisStreamConsumer) {
	if len(r.Streams) == 0 {
		v.fail(path+".streams", "is required")
	}
	if slices.Contains(r.Streams, "") {
		v.fail(path+".streams", "an empty stream key")
	}
	if r.ConsumerGroup == "" {
		v.fail(path+".consumer_group", "is required")
	}
	if r.PayloadValue == "" {
		v.fail(path+".payload_value", "is required")
	}
	if r.PublicationDataMode.Enabled && r.PublicationDataMode.ChannelsValue == "" {
		v.fail(path+".publication_data_mode.channels_value", "is required in publication data mode")
	}
	v.redis(path, &r.Redis)
}

func (v *validator) jetStreamConsumer(path string, j *NatsJetStreamConsumer) {
	if j.URL == "" {
		v.fail(path+".url", "is required")
	} else {
		v.natsURL(path+".url", j.URL)
	}
	if j.StreamName == "" {
		v.fail(path+".stream_name", "is required")
	}
	if j.DurableConsumerName == "" {
		v.fail(path+".durable_consumer_name", "is required")
	}
	if j.PublicationDataMode.Enabled && j.PublicationDataMode.ChannelsHeader == "" {
		v.fail(path+".publication_data_mode.channels_header", "is required in publication data mode")
	}
	v.clientTLS(path+".tls", &j.TLS)
}

// sqlName is a table name, optionally qualified by its schema, that can
// go into a query as it is.
var sqlName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*(\.[a-zA-Z_][a-zA-Z0-9_]*)?$`)

// clientTLS checks the client side of an enabled TLS: a certificate needs
// its key and a key its certificate.
func (v *validator) clientTLS(path string, t *TLS) {
	if !t.Enabled {
		return
	}
	cert := t.CertPEM != "" || t.CertPEMB64 != "" || t.CertPEMFile != ""
	key := t.KeyPEM != "" || t.KeyPEMB64 != "" || t.KeyPEMFile != ""
	if cert != key {
		v.fail(path+".cert_pem", "a client certificate and its private key go together: set both or neither")
	}
}
