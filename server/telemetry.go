package server

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/gyrehq/gyre/server/telemetry"
)

// setupTelemetry builds what the opentelemetry keys turn on (nothing when
// opentelemetry.enabled is false): after the node, whose id names this
// process in the resource, and before the parts that are handed its
// tracer providers (the API, the proxies, the consumers). The span
// counters go with the server's other metrics, and with opentelemetry.
// metrics those metrics are pushed over OTLP too.
func (s *Server) setupTelemetry() error {
	tel, err := telemetry.New(context.Background(), telemetry.Config{
		OpenTelemetry: s.cfg.OpenTelemetry,
		NodeID:        s.node.ID(),
		Version:       Version,
		Registerer:    s.metrics.Registerer(),
		Gatherer:      s.metrics.Gatherer(),
		Logger:        s.log,
	})
	if err != nil {
		return fmt.Errorf("server: opentelemetry: %w", err)
	}
	s.tel = tel
	if s.delivery != nil {
		s.delivery.set(tel)
	}
	return nil
}

// shutdownTelemetry flushes the spans still queued, within ctx, last of
// all so that the spans of the final API calls and consumed messages go
// too. A collector that cannot take them does not fail the shutdown: the
// dropped spans are counted and logged.
func (s *Server) shutdownTelemetry(ctx context.Context) {
	if err := s.tel.Shutdown(ctx); err != nil {
		s.log.Warn("opentelemetry: spans not flushed at shutdown", "error", err)
	}
}

// deliveryRelay is the node's delivery tracer while opentelemetry.delivery
// is on. The node takes its tracer when it is made, and the telemetry is
// made after the node (see setupTelemetry): the relay forwards to it once
// set, which is before the node runs.
type deliveryRelay struct {
	to atomic.Pointer[telemetry.Telemetry]
}

func (r *deliveryRelay) set(t *telemetry.Telemetry) { r.to.Store(t) }

// FannedOut hands f to the telemetry, once it is set.
func (r *deliveryRelay) FannedOut(f *telemetry.FanOut) {
	if t := r.to.Load(); t != nil {
		t.FannedOut(f)
	}
}
