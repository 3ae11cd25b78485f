// Package outbox makes a bus enqueue atomic with a PostgreSQL transaction. The producer writes
// its job as a row of an outbox table inside its business transaction (Add), so the business
// rows and the job commit together or not at all; a relay (Relay, Run) moves committed rows to
// the bus. Each row carries the JOB id minted when it was written, and the bus's enqueue is
// idempotent by id: a relay that dies after the enqueue and before deleting the rows sends them
// again and the bus answers duplicate, so every committed row becomes exactly one job.
package outbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/wait"
)

// DefaultTable is the outbox table's name when Options.Table is empty.
const DefaultTable = "emq_outbox"

// Options configure an Outbox.
type Options struct {
	Table string        // table name, possibly schema-qualified ("app.emq_outbox"); default DefaultTable
	Batch int           // rows relayed per transaction; default 500
	Poll  time.Duration // Run's wait when the outbox is empty; default 5 ms
}

// Outbox relays committed rows of its table to a bus.
type Outbox struct {
	b     *bus.Bus
	table string // sanitized
	opt   Options
}

// New returns an outbox on b.
func New(b *bus.Bus, opt Options) *Outbox {
	if opt.Table == "" {
		opt.Table = DefaultTable
	}
	if opt.Batch <= 0 {
		opt.Batch = 500
	}
	if opt.Poll <= 0 {
		opt.Poll = 5 * time.Millisecond
	}
	return &Outbox{b: b, opt: opt, table: pgx.Identifier(strings.SplitN(opt.Table, ".", 2)).Sanitize()}
}

// Empty reports whether every committed row has been relayed.
func (o *Outbox) Empty(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	var left bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+o.table+`)`).Scan(&left); err != nil {
		return false, fmt.Errorf("outbox: %w", err)
	}
	return !left, nil
}

// Execer is a pool, a connection or a transaction.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Schema creates the outbox table if it does not exist.
func (o *Outbox) Schema(ctx context.Context, db Execer) error {
	_, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+o.table+` (
		seq bigserial PRIMARY KEY,
		queue text NOT NULL,
		job_id text NOT NULL,
		payload bytea NOT NULL)`)
	if err != nil {
		return fmt.Errorf("outbox: schema: %w", err)
	}
	return nil
}

// Add writes a job for queue into the outbox inside tx, under an id minted now, and returns the
// id. The job reaches the bus only if tx commits.
func (o *Outbox) Add(ctx context.Context, tx pgx.Tx, queue string, payload []byte) (string, error) {
	id, err := o.b.Mint(ctx)
	if err != nil {
		return "", fmt.Errorf("outbox: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+o.table+` (queue, job_id, payload) VALUES ($1, $2, $3)`, queue, id, payload); err != nil {
		return "", fmt.Errorf("outbox: add: %w", err)
	}
	return id, nil
}

type row struct {
	queue, id string
	payload   []byte
}

// Relay moves up to Options.Batch committed rows to the bus in one transaction: lock them (SKIP
// LOCKED, so relays can run side by side), enqueue them under their ids, delete them, commit.
// It returns how many rows it moved; an error leaves the rows for the next pass.
func (o *Outbox) Relay(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("outbox: relay: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rs, err := tx.Query(ctx, `DELETE FROM `+o.table+` WHERE seq IN (SELECT seq FROM `+o.table+
		` ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED) RETURNING queue, job_id, payload`, o.opt.Batch)
	if err != nil {
		return 0, fmt.Errorf("outbox: relay: %w", err)
	}
	byQueue := map[string][]bus.Message{}
	n := 0
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.queue, &r.id, &r.payload); err != nil {
			rs.Close()
			return 0, fmt.Errorf("outbox: relay: %w", err)
		}
		byQueue[r.queue] = append(byQueue[r.queue], bus.Message{ID: r.id, Payload: r.payload})
		n++
	}
	if err := rs.Err(); err != nil {
		return 0, fmt.Errorf("outbox: relay: %w", err)
	}
	for q, msgs := range byQueue {
		// A duplicate answer (Created false) is a row relayed before a crash: already a job.
		if _, err := o.b.EnqueueBatch(ctx, q, msgs); err != nil {
			return 0, fmt.Errorf("outbox: relay to %s: %w", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("outbox: relay: commit: %w", err)
	}
	return n, nil
}

// Run relays until ctx ends: passes back to back while rows are there, a short poll when the
// outbox is empty. A failed pass is retried after the poll interval; Run returns only ctx's
// error.
func (o *Outbox) Run(ctx context.Context, pool *pgxpool.Pool) error {
	for {
		n, err := o.Relay(ctx, pool)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil && n > 0 {
			continue
		}
		if err := wait.Sleep(ctx, o.opt.Poll); err != nil {
			return err
		}
	}
}
