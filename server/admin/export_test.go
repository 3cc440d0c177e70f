package admin

import (
	"context"
	"time"
)

// SetSleep replaces how h waits for a throttled login's turn, so that
// tests move their clock instead of sleeping.
func SetSleep(h *Handler, f func(context.Context, time.Duration) error) { h.sleep = f }
