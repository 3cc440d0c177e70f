// Package jetstream consumes a NATS JetStream stream. (Being built.)
package jetstream

import (
	"crypto/tls"
	"errors"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
)

// New makes the consumer of cfg.
func New(cfg config.NatsJetStreamConsumer, tlsCfg *tls.Config, d *consume.Dispatcher) (consume.Consumer, error) {
	return nil, errors.New("jetstream: not built yet")
}
