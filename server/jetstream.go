package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/nats/jetstream"
	"github.com/gyrehq/gyre/server/config"
)

// newJetStreamStore connects the JetStream store of broker.nats.jetstream,
// on the NATS of broker.nats, its streams under broker.nats.prefix.
func newJetStreamStore(c *config.Config, tlsCfg *tls.Config, log *slog.Logger) (broker.Store, error) {
	n := c.Broker.Nats
	s, err := jetstream.New(jetstream.Config{
		URL:      n.URL,
		Prefix:   n.Prefix,
		TLS:      tlsCfg,
		Replicas: n.JetStream.Replicas,
		Logger:   log,
	})
	if err != nil {
		return nil, fmt.Errorf("server: broker.nats.jetstream: %w", err)
	}
	return s, nil
}
