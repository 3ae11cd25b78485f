// Package absorb turns the bus's at-least-once delivery into an exactly-once effect. A handler
// wrapped by Handler runs in a PostgreSQL transaction that also records the job's id in an
// absorbed table; a redelivery of an id already recorded (a consumer that died after the commit
// and before its complete reached the bus, a lease that passed) finds the row and skips the
// effect, and the job is completed either way. The effect and the record commit together or not
// at all, so the effect happens once per job id.
package absorb

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echomq/kit/reference/bus"
)

// DefaultTable is the absorbed-ids table's name when none is given.
const DefaultTable = "emq_absorbed"

// Effect is a handler's work, done inside tx.
type Effect func(ctx context.Context, tx pgx.Tx, j *bus.Job) error

// Absorber records absorbed job ids in a table of pool's database.
type Absorber struct {
	pool  *pgxpool.Pool
	table string // sanitized
}

// New returns an absorber on table (possibly schema-qualified; empty: DefaultTable).
func New(pool *pgxpool.Pool, table string) *Absorber {
	if table == "" {
		table = DefaultTable
	}
	return &Absorber{pool: pool, table: pgx.Identifier(strings.SplitN(table, ".", 2)).Sanitize()}
}

// Schema creates the table if it does not exist.
func (a *Absorber) Schema(ctx context.Context) error {
	_, err := a.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+a.table+` (
		queue text NOT NULL,
		job_id text NOT NULL,
		PRIMARY KEY (queue, job_id))`)
	if err != nil {
		return fmt.Errorf("absorb: schema: %w", err)
	}
	return nil
}

// Handler wraps effect into a bus handler: one transaction claims the job's id in the table and
// runs the effect; an id already there skips the effect. An error from the effect rolls both
// back and is returned, so the bus retries the job as usual.
func (a *Absorber) Handler(effect Effect) bus.Handler {
	return func(ctx context.Context, j *bus.Job) error {
		tx, err := a.pool.Begin(ctx)
		if err != nil {
			return fmt.Errorf("absorb: %w", err)
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		var tag pgconn.CommandTag
		if tag, err = tx.Exec(ctx, `INSERT INTO `+a.table+` (queue, job_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, j.Queue, j.ID); err != nil {
			return fmt.Errorf("absorb: record %s: %w", j.ID, err)
		}
		if tag.RowsAffected() == 0 {
			return nil // absorbed before: the effect is in the database already
		}
		if err := effect(ctx, tx, j); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("absorb: commit %s: %w", j.ID, err)
		}
		return nil
	}
}

// Absorbed reports whether id's effect has been committed.
func (a *Absorber) Absorbed(ctx context.Context, queue, id string) (bool, error) {
	var ok bool
	err := a.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+a.table+` WHERE queue = $1 AND job_id = $2)`, queue, id).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("absorb: %w", err)
	}
	return ok, nil
}
