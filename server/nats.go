package server

import (
	"fmt"
	"log/slog"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/nats"
	"github.com/gyrehq/gyre/server/config"
)

// newNatsBroker connects the nats broker that broker.nats describes,
// keeping history in store (Redis for redisnats) or, with
// broker.nats.jetstream, in JetStream; without either it keeps none (the
// config refuses namespaces with history then).
func newNatsBroker(c *config.Config, store broker.Store, log *slog.Logger) (*nats.Broker, error) {
	n := c.Broker.Nats
	tlsCfg, err := clientTLS(n.TLS)
	if err != nil {
		return nil, fmt.Errorf("server: broker.nats.tls: %w", err)
	}
	if store == nil && n.JetStream.Enabled {
		if store, err = newJetStreamStore(c, tlsCfg, log); err != nil {
			return nil, err
		}
	}
	b, err := nats.New(nats.Config{
		URL:               n.URL,
		Prefix:            n.Prefix,
		DialTimeout:       n.DialTimeout,
		WriteTimeout:      n.WriteTimeout,
		TLS:               tlsCfg,
		Name:              "gyre " + c.Node.Name,
		NamespaceBoundary: c.Channel.NamespaceBoundary,
		PrivatePrefix:     c.Channel.PrivatePrefix,
		RawMode: nats.RawMode{
			Enabled:             n.RawMode.Enabled,
			Prefix:              n.RawMode.Prefix,
			ChannelReplacements: n.RawMode.ChannelReplacements,
		},
		Store:  store,
		Logger: log,
	})
	if err != nil {
		if store != nil {
			_ = store.Close()
		}
		return nil, fmt.Errorf("server: broker.nats: %w", err)
	}
	return b, nil
}
