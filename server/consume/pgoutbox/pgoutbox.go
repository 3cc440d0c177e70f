// Package pgoutbox consumes a PostgreSQL outbox table. (Being built.)
package pgoutbox

import (
	"crypto/tls"
	"errors"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
)

// New makes the consumer of cfg.
func New(cfg config.PostgresConsumer, tlsCfg *tls.Config, d *consume.Dispatcher) (consume.Consumer, error) {
	return nil, errors.New("pgoutbox: not built yet")
}
