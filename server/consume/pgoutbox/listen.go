package pgoutbox

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// listen holds a connection of its own that LISTENs on the notification
// channel, and wakes the partition each notification names, until ctx
// ends. It reconnects when the connection fails.
func (c *Consumer) listen(ctx context.Context) {
	attempt := 0
	for ctx.Err() == nil {
		start := time.Now()
		err := c.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			attempt = 0 // it had been working: back off from the start
		}
		c.d.SourceFailed("listen on "+c.cfg.PartitionNotificationChannel, err)
		if !c.d.Backoff(ctx, attempt) {
			return
		}
		attempt++
	}
}

// listenOnce connects, listens, and hands notifications over until the
// connection fails or ctx ends.
func (c *Consumer) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, c.listenCfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = conn.Close(cctx)
		cancel()
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{c.cfg.PartitionNotificationChannel}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Rows may have come while no one listened (at start, or while the
	// connection was down): have every partition look.
	c.wakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait for notifications: %w", err)
		}
		p, err := strconv.Atoi(strings.TrimSpace(n.Payload))
		if err != nil || p < 0 || p >= len(c.wake) {
			c.fails.Add("notification", slog.LevelWarn, "outbox notification ignored: its payload is not a partition number",
				"channel", n.Channel, "payload", clip(n.Payload), "partitions", len(c.wake))
			continue
		}
		c.wakeUp(p)
	}
}

// clip shortens a notification's payload for a log line: it may be 8000
// bytes of anything.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
