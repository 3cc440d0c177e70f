package pgoutbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/pgoutbox/internal/compact"
)

// errLockBusy is a round's answer when, with use_try_lock, another node
// holds the partition's lock.
var errLockBusy = errors.New("pgoutbox: partition locked by another consumer")

// round reads, runs and deletes one batch of partition p in one
// transaction, and reports whether the batch was full (more rows may be
// waiting). ctx ends the round only before its rows run: once they are
// selected they run, and those done are deleted and committed.
func (c *Consumer) round(ctx context.Context, pool *pgxpool.Pool, p int) (full bool, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer conn.Release()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return false, fmt.Errorf("begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			// The connection is dropped when this fails: the server then
			// ends the transaction, and with it the lock.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
			_ = tx.Rollback(rctx)
			cancel()
		}
	}()
	if err := c.lock(ctx, tx, p); err != nil {
		return false, err
	}
	msgs, ids, err := c.read(ctx, tx, p)
	if err != nil {
		return false, err
	}
	if len(msgs) == 0 {
		return false, nil
	}
	c.active.Store(true)
	// Dispatch stops early only when ctx ends while it waits to run a
	// command again (the broker down): the rest stay for the next round.
	done, _ := c.d.Dispatch(ctx, msgs)
	// Whatever ran must be deleted, stopping or not.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if done > 0 {
		if _, err := tx.Exec(wctx, c.deleteSQL, ids[:done]); err != nil {
			return false, fmt.Errorf("delete %d rows run (they will run again): %w", done, err)
		}
	}
	if err := tx.Commit(wctx); err != nil {
		return false, fmt.Errorf("commit the deletion of %d rows run (they will run again): %w", done, err)
	}
	committed = true
	return done == len(msgs) && len(msgs) == c.cfg.PartitionSelectLimit, nil
}

// lock takes the advisory lock of partition p for the transaction tx:
// waiting for it, or with use_try_lock answering errLockBusy when another
// node holds it.
func (c *Consumer) lock(ctx context.Context, tx pgx.Tx, p int) error {
	if !c.cfg.UseTryLock {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", c.lockNames[p]); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		return nil
	}
	var got bool
	if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock(hashtext($1))", c.lockNames[p]).Scan(&got); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if !got {
		return errLockBusy
	}
	return nil
}

// read selects the next batch of partition p: its messages, and the ids
// of their rows in the same order.
func (c *Consumer) read(ctx context.Context, tx pgx.Tx, p int) ([]consume.Message, []int64, error) {
	rows, err := tx.Query(ctx, c.selectSQL, p, c.cfg.PartitionSelectLimit)
	if err != nil {
		return nil, nil, fmt.Errorf("select: %w", err)
	}
	defer rows.Close()
	var (
		msgs []consume.Message
		ids  []int64
	)
	prefix := "partition " + strconv.Itoa(p) + " id "
	// The outbox carries no trace context: each row's span starts a
	// trace.
	traced, partition := c.d.Traced(), strconv.Itoa(p)
	for rows.Next() {
		var (
			id      int64
			method  string
			payload []byte
		)
		if err := rows.Scan(&id, &method, &payload); err != nil {
			return nil, nil, fmt.Errorf("read a row: %w", err)
		}
		m := consume.Message{Method: method, Payload: compact.JSON(payload), Position: prefix + strconv.FormatInt(id, 10)}
		if traced {
			m.Destination, m.Partition = c.cfg.OutboxTableName, partition
		}
		msgs = append(msgs, m)
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("select: %w", err)
	}
	return msgs, ids, nil
}
