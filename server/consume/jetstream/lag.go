package jetstream

import (
	"context"
	"time"
)

// watchLag reports the durable consumer's lag every lagEvery until ctx
// ends: the messages not delivered yet (NumPending) and those delivered
// but not acknowledged (NumAckPending), by every node bound to it. It
// reads the consumer's info apart from the batch loop, so that the lag
// keeps growing in the report while a batch waits for a broker that is
// down.
func (c *Consumer) watchLag(ctx context.Context) {
	t := time.NewTicker(lagEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b := c.bound.Load()
		if b == nil {
			continue
		}
		ictx, cancel := context.WithTimeout(ctx, apiTimeout)
		info, err := b.cons.Info(ictx)
		cancel()
		if err != nil {
			// The batch loop reports what is wrong with the source; a lag
			// read now would be stale anyway.
			continue
		}
		c.d.SetLag(int64(info.NumPending) + int64(info.NumAckPending))
	}
}
