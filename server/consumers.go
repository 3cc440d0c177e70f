package server

import (
	"fmt"
	"strconv"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/jetstream"
	"github.com/gyrehq/gyre/server/consume/kafka"
	"github.com/gyrehq/gyre/server/consume/pgoutbox"
	"github.com/gyrehq/gyre/server/consume/redisstream"
)

// setupConsumers makes the enabled consumers of the config, each running
// its commands through the API executor; Start starts them and Shutdown
// stops them before the node.
func (s *Server) setupConsumers() error {
	s.consumers = &consume.Set{}
	for i, c := range s.cfg.Consumers {
		if !c.Enabled {
			s.log.Info("consumer not enabled", "consumer", c.Name, "type", c.Type)
			continue
		}
		path := "consumers[" + strconv.Itoa(i) + "]"
		d := consume.NewDispatcher(c.Name, c.Type, s.exec, s.log)
		d.SetTracerProvider(s.tel.ConsumerTracerProvider())
		cons, err := newConsumer(path, c, d)
		if err != nil {
			return fmt.Errorf("server: %s (%s): %w", path, c.Name, err)
		}
		s.consumers.Add(d, cons)
	}
	return nil
}

// newConsumer makes the consumer of c, the consumer at path in the config.
func newConsumer(path string, c config.Consumer, d *consume.Dispatcher) (consume.Consumer, error) {
	switch c.Type {
	case "postgresql":
		t, err := clientTLS(c.Postgres.TLS)
		if err != nil {
			return nil, fmt.Errorf("%s.postgresql.tls: %w", path, err)
		}
		return pgoutbox.New(c.Postgres, t, d)
	case "kafka":
		t, err := clientTLS(c.Kafka.TLS)
		if err != nil {
			return nil, fmt.Errorf("%s.kafka.tls: %w", path, err)
		}
		return kafka.New(c.Kafka, t, d)
	case "redis_stream":
		rc, err := redisConfig(path+".redis_stream", c.RedisStream.Redis, config.RedisHistory{}, d.Logger(), nil)
		if err != nil {
			return nil, err
		}
		return redisstream.New(c.RedisStream, rc, d)
	case "nats_jetstream":
		t, err := clientTLS(c.NatsJetStream.TLS)
		if err != nil {
			return nil, fmt.Errorf("%s.nats_jetstream.tls: %w", path, err)
		}
		return jetstream.New(c.NatsJetStream, t, d)
	}
	// Validate refuses the other types of an enabled consumer.
	return nil, fmt.Errorf("consumer type %q is not supported", c.Type)
}

// Consumers are the states of the node's consumers, in config order.
func (s *Server) Consumers() []consume.Snapshot { return s.consumers.Snapshots() }
