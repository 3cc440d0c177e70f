package pgoutbox

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// How the lag (rows waiting in the partitions read) is measured: a count
// every lagInterval, stopping at lagCountCap rows so that a table with a
// backlog of millions costs a bounded scan. While the last count found no
// row and no round has found one since, the count is skipped: an idle
// table costs no query.
const (
	lagInterval = 5 * time.Second
	lagCountCap = 1_000_000
)

// countLag reports the lag through the dispatcher until ctx ends.
func (c *Consumer) countLag(ctx context.Context, pool *pgxpool.Pool) {
	t := time.NewTicker(c.lagEvery)
	defer t.Stop()
	known, last := false, int64(-1)
	for {
		if c.active.Swap(false) || !known || last != 0 {
			n, err := c.count(ctx, pool)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				// The partitions report the source's failures; an
				// unknown lag is all this one says.
				known, last = false, -1
				c.d.SetLag(-1)
			default:
				known, last = true, n
				c.d.SetLag(n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// count counts the rows waiting, up to lagCountCap.
func (c *Consumer) count(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, max(c.lagEvery, time.Second))
	defer cancel()
	var n int64
	err := pool.QueryRow(ctx, c.countSQL, c.cfg.NumPartitions, lagCountCap).Scan(&n)
	return n, err
}
