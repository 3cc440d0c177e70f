package telemetry

import (
	"context"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/gyrehq/gyre/server/config"
)

// StartWithExporter is New with exp for the exporter New would make, and
// env for the environment.
func StartWithExporter(ctx context.Context, cfg Config, env *config.OTelEnv, exp sdktrace.SpanExporter) (*Telemetry, error) {
	return start(ctx, cfg, env, exp)
}

// ForceFlush exports every span that ended.
func (t *Telemetry) ForceFlush(ctx context.Context) error { return t.tp.ForceFlush(ctx) }
