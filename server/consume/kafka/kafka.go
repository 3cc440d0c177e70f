// Package kafka consumes Kafka topics. (Being built.)
package kafka

import (
	"crypto/tls"
	"errors"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
)

// New makes the consumer of cfg.
func New(cfg config.KafkaConsumer, tlsCfg *tls.Config, d *consume.Dispatcher) (consume.Consumer, error) {
	return nil, errors.New("kafka: not built yet")
}
