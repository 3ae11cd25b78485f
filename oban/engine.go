package oban

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// nowUTC is Oban's timestamp convention (utc_datetime_usec in a timestamp column), taken from
// the server's clock rather than the client's; see README.md.
const nowUTC = `timezone('UTC', now())`

// Config configures an Engine.
type Config struct {
	// Prefix is the Postgres schema holding oban_jobs (Oban's :prefix); default "public".
	Prefix string
	// Notify sends Oban's insert notification (pg_notify on "<prefix>.oban_insert") after an
	// insert of available jobs and after staging, as Oban does with insert_trigger: true, its
	// default. Nobody need be listening; the cost is what is being modelled.
	Notify bool
	// ProducerID is the second element of attempted_by (Oban uses its producer's UUID); default
	// a random one per Engine.
	ProducerID string
}

// Engine runs Oban's Basic-engine SQL against one pool.
type Engine struct {
	db       DB
	prefix   string
	notify   bool
	producer string
	channel  string
	sql      statements
}

type statements struct {
	insertOne, insertOneID, fetch, complete, retry, discard, cancel, snooze, stage, available string
}

// New returns an Engine over db. The schema must exist (Migrate).
func New(db DB, cfg Config) (*Engine, error) {
	if db == nil {
		return nil, &ValidationError{"db", "nil"}
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if err := checkPrefix(cfg.Prefix); err != nil {
		return nil, err
	}
	if cfg.ProducerID == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("oban: producer id: %w", err)
		}
		cfg.ProducerID = hex.EncodeToString(b[:])
	}
	t := pgx.Identifier{cfg.Prefix, "oban_jobs"}.Sanitize()
	st := pgx.Identifier{cfg.Prefix, "oban_job_state"}.Sanitize()
	e := &Engine{db: db, prefix: cfg.Prefix, notify: cfg.Notify, producer: cfg.ProducerID,
		channel: cfg.Prefix + ".oban_insert"}
	cols := `state, queue, worker, args, meta, tags, max_attempts, priority, scheduled_at`
	vals := `$1::` + st + `, $2, $3, $4::jsonb, $5::jsonb, $6::text[], $7, $8, coalesce($9::timestamp, ` + nowUTC + `)`
	e.sql = statements{
		insertOne: `INSERT INTO ` + t + ` (` + cols + `) VALUES (` + vals + `)
			ON CONFLICT DO NOTHING RETURNING id, state::text`,
		insertOneID: `INSERT INTO ` + t + ` (` + cols + `, id) VALUES (` + vals + `, $10)
			ON CONFLICT DO NOTHING RETURNING id, state::text`,
		// Basic.fetch_jobs: the CTE is Oban's optimisation fence, so the planner cannot rerun the
		// LIMITed subquery per row and update more than demand.
		fetch: `WITH subset AS (
			  SELECT id FROM ` + t + `
			  WHERE state = 'available' AND queue = $1
			  ORDER BY priority ASC, scheduled_at ASC, id ASC
			  LIMIT $2
			  FOR UPDATE SKIP LOCKED)
			UPDATE ` + t + ` AS j
			SET state = 'executing', attempted_at = ` + nowUTC + `, attempted_by = $3::text[],
			    attempt = j.attempt + 1
			FROM subset AS x
			WHERE j.id = x.id AND j.attempt < j.max_attempts
			RETURNING j.id, j.state::text, j.queue, j.worker, j.args, j.meta, j.tags, j.attempt,
			          j.max_attempts, j.priority, j.inserted_at, j.scheduled_at, j.attempted_at,
			          j.attempted_by`,
		complete: `UPDATE ` + t + ` SET state = 'completed', completed_at = ` + nowUTC + ` WHERE id = $1`,
		retry: `UPDATE ` + t + ` SET state = 'retryable',
			scheduled_at = ` + nowUTC + ` + make_interval(secs => $2),
			errors = errors || ARRAY[jsonb_build_object('attempt', attempt, 'at', ` + nowUTC + `, 'error', $3::text)]
			WHERE id = $1`,
		discard: `UPDATE ` + t + ` SET state = 'discarded', discarded_at = ` + nowUTC + `,
			errors = errors || ARRAY[jsonb_build_object('attempt', attempt, 'at', ` + nowUTC + `, 'error', $2::text)]
			WHERE id = $1`,
		cancel: `UPDATE ` + t + ` SET state = 'cancelled', cancelled_at = ` + nowUTC + `
			WHERE id = $1 AND state NOT IN ('cancelled', 'completed', 'discarded')`,
		snooze: `UPDATE ` + t + ` SET state = 'scheduled',
			scheduled_at = ` + nowUTC + ` + make_interval(secs => $2), max_attempts = max_attempts + 1
			WHERE id = $1`,
		// Basic.stage_jobs: no lock in the subquery; Oban runs it on the leader only.
		stage: `UPDATE ` + t + ` AS j SET state = 'available'
			FROM (SELECT id, state FROM ` + t + `
			      WHERE state IN ('scheduled', 'retryable') AND queue IS NOT NULL
			        AND scheduled_at <= ` + nowUTC + `
			      LIMIT $1) AS x
			WHERE j.id = x.id
			RETURNING j.id, j.queue, x.state::text`,
		// Basic.check_available, used by the stager to notify every queue with work.
		available: `SELECT DISTINCT queue FROM ` + t + ` WHERE state = 'available' AND queue IS NOT NULL`,
	}
	return e, nil
}

// Prefix is the schema this engine works in.
func (e *Engine) Prefix() string { return e.prefix }

// Insert inserts one job in its own transaction (Basic.insert_job wraps the insert in
// Repo.transaction), then notifies outside it as Oban.Engine.insert_job does.
func (e *Engine) Insert(ctx context.Context, job Job) (Inserted, error) {
	j, err := job.normalize()
	if err != nil {
		return Inserted{}, err
	}
	tx, err := e.db.Begin(ctx)
	if err != nil {
		return Inserted{}, fmt.Errorf("oban: insert: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	res, err := e.insertOne(ctx, tx, j)
	if err != nil {
		return Inserted{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Inserted{}, fmt.Errorf("oban: insert: commit: %w", err)
	}
	if e.notify && !res.Conflict && res.State == Available {
		if err := e.notifyQueues(ctx, e.db, []string{j.Queue}); err != nil {
			return res, err
		}
	}
	return res, nil
}

// InsertTx inserts one job inside the caller's transaction, so it commits or rolls back with
// the caller's business rows. The notification, if on, is sent inside the same transaction;
// Postgres delivers it only at commit.
func (e *Engine) InsertTx(ctx context.Context, tx pgx.Tx, job Job) (Inserted, error) {
	if tx == nil {
		return Inserted{}, &ValidationError{"tx", "nil"}
	}
	j, err := job.normalize()
	if err != nil {
		return Inserted{}, err
	}
	res, err := e.insertOne(ctx, tx, j)
	if err != nil {
		return Inserted{}, err
	}
	if e.notify && !res.Conflict && res.State == Available {
		if err := e.notifyQueues(ctx, tx, []string{j.Queue}); err != nil {
			return res, err
		}
	}
	return res, nil
}

func (e *Engine) insertOne(ctx context.Context, db DB, j Job) (Inserted, error) {
	args := []any{string(j.state()), j.Queue, j.Worker, string(j.Args), string(j.Meta), j.Tags,
		j.MaxAttempts, j.Priority, optTime(j.ScheduledAt)}
	sql := e.sql.insertOne
	if j.ID != 0 {
		sql = e.sql.insertOneID
		args = append(args, j.ID)
	}
	var res Inserted
	var state string
	err := db.QueryRow(ctx, sql, args...).Scan(&res.ID, &state)
	if errors.Is(err, pgx.ErrNoRows) {
		return Inserted{ID: j.ID, Conflict: true}, nil
	}
	if err != nil {
		return Inserted{}, fmt.Errorf("oban: insert: %w", err)
	}
	res.State = State(state)
	return res, nil
}

// maxInsertAll keeps one multi-row INSERT under Postgres's 65535 bind parameters.
const maxInsertAll = 65535 / 10

// InsertAll inserts jobs with one multi-row INSERT … ON CONFLICT DO NOTHING RETURNING (as
// Basic.insert_all_jobs does through Repo.insert_all), then notifies each queue that got an
// available job. Rows swallowed by a conflict are absent from the result, as in Oban.
func (e *Engine) InsertAll(ctx context.Context, jobs []Job) ([]Inserted, error) {
	return e.insertAll(ctx, e.db, jobs)
}

// InsertAllTx is InsertAll inside the caller's transaction.
func (e *Engine) InsertAllTx(ctx context.Context, tx pgx.Tx, jobs []Job) ([]Inserted, error) {
	if tx == nil {
		return nil, &ValidationError{"tx", "nil"}
	}
	return e.insertAll(ctx, tx, jobs)
}

func (e *Engine) insertAll(ctx context.Context, db DB, jobs []Job) ([]Inserted, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	if len(jobs) > maxInsertAll {
		return nil, &ValidationError{"jobs", fmt.Sprintf("%d jobs exceed one statement's %d", len(jobs), maxInsertAll)}
	}
	st := pgx.Identifier{e.prefix, "oban_job_state"}.Sanitize()
	var b strings.Builder
	b.WriteString(`INSERT INTO `)
	b.WriteString(pgx.Identifier{e.prefix, "oban_jobs"}.Sanitize())
	b.WriteString(` (id, state, queue, worker, args, meta, tags, max_attempts, priority, scheduled_at) VALUES `)
	args := make([]any, 0, len(jobs)*10)
	p := func(v any, cast string) {
		args = append(args, v)
		b.WriteString("$")
		b.WriteString(strconv.Itoa(len(args)))
		b.WriteString(cast)
	}
	for i, job := range jobs {
		j, err := job.normalize()
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		if j.ID != 0 {
			p(j.ID, "::bigint")
		} else {
			b.WriteString("DEFAULT")
		}
		b.WriteString(", ")
		p(string(j.state()), "::"+st)
		b.WriteString(", ")
		p(j.Queue, "::text")
		b.WriteString(", ")
		p(j.Worker, "::text")
		b.WriteString(", ")
		p(string(j.Args), "::jsonb")
		b.WriteString(", ")
		p(string(j.Meta), "::jsonb")
		b.WriteString(", ")
		p(j.Tags, "::text[]")
		b.WriteString(", ")
		p(j.MaxAttempts, "::int")
		b.WriteString(", ")
		p(j.Priority, "::int")
		b.WriteString(", ")
		if j.ScheduledAt.IsZero() {
			b.WriteString("DEFAULT")
		} else {
			p(j.ScheduledAt.UTC(), "::timestamp")
		}
		b.WriteString(")")
	}
	b.WriteString(` ON CONFLICT DO NOTHING RETURNING id, state::text, queue`)
	rows, err := db.Query(ctx, b.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("oban: insert_all: %w", err)
	}
	out := make([]Inserted, 0, len(jobs))
	var queues []string
	seen := map[string]bool{}
	for rows.Next() {
		var in Inserted
		var state, queue string
		if err := rows.Scan(&in.ID, &state, &queue); err != nil {
			rows.Close()
			return nil, fmt.Errorf("oban: insert_all: scan: %w", err)
		}
		in.State = State(state)
		out = append(out, in)
		if in.State == Available && !seen[queue] {
			seen[queue] = true
			queues = append(queues, queue)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("oban: insert_all: %w", err)
	}
	if e.notify && len(queues) > 0 {
		if err := e.notifyQueues(ctx, db, queues); err != nil {
			return out, err
		}
	}
	return out, nil
}

// notifyQueues is the Postgres notifier's notify: one pg_notify per payload, payloads as a
// JSON array expanded server-side.
func (e *Engine) notifyQueues(ctx context.Context, db DB, queues []string) error {
	payloads := make([]string, len(queues))
	for i, q := range queues {
		p, err := json.Marshal(map[string]string{"queue": q})
		if err != nil {
			return fmt.Errorf("oban: notify: %w", err)
		}
		payloads[i] = string(p)
	}
	arr, err := json.Marshal(payloads)
	if err != nil {
		return fmt.Errorf("oban: notify: %w", err)
	}
	if _, err := db.Exec(ctx,
		`SELECT pg_notify($1, payload) FROM json_array_elements_text($2::json) AS payload`,
		e.channel, string(arr)); err != nil {
		return fmt.Errorf("oban: notify: %w", err)
	}
	return nil
}

// Fetch claims up to demand available jobs of queue for node, in one transaction, as
// Basic.fetch_jobs: lock the oldest-by-(priority, scheduled_at, id) rows with SKIP LOCKED, then
// mark them executing and bump attempt — except rows already at max_attempts, which stay put.
func (e *Engine) Fetch(ctx context.Context, queue string, demand int, node string) ([]Fetched, error) {
	switch {
	case queue == "":
		return nil, &ValidationError{"queue", "required"}
	case demand <= 0:
		return nil, &ValidationError{"demand", fmt.Sprintf("must be > 0, got %d", demand)}
	case node == "":
		return nil, &ValidationError{"node", "required"}
	}
	tx, err := e.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("oban: fetch: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, e.sql.fetch, queue, demand, []string{node, e.producer})
	if err != nil {
		return nil, fmt.Errorf("oban: fetch: %w", err)
	}
	var out []Fetched
	for rows.Next() {
		var f Fetched
		var state string
		var args, meta []byte
		if err := rows.Scan(&f.ID, &state, &f.Queue, &f.Worker, &args, &meta, &f.Tags, &f.Attempt,
			&f.MaxAttempts, &f.Priority, &f.InsertedAt, &f.ScheduledAt, &f.AttemptedAt,
			&f.AttemptedBy); err != nil {
			rows.Close()
			return nil, fmt.Errorf("oban: fetch: scan: %w", err)
		}
		f.State, f.Args, f.Meta = State(state), args, meta
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("oban: fetch: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("oban: fetch: commit: %w", err)
	}
	return out, nil
}

// Complete marks a job completed (Basic.complete_job).
func (e *Engine) Complete(ctx context.Context, id int64) error {
	return e.ack(ctx, "complete", e.sql.complete, id)
}

// Retry records a failed attempt. As Oban's executor does, a job at its last attempt is
// discarded instead; otherwise it becomes retryable, due after backoff (Basic.error_job).
// It returns the state the job was moved to.
func (e *Engine) Retry(ctx context.Context, job Fetched, reason string, backoff time.Duration) (State, error) {
	if backoff < 0 {
		return "", &ValidationError{"backoff", "negative"}
	}
	if job.Attempt >= job.MaxAttempts {
		return Discarded, e.Discard(ctx, job.ID, reason)
	}
	return Retryable, e.ack(ctx, "retry", e.sql.retry, job.ID, backoff.Seconds(), reason)
}

// Discard marks a job discarded, appending its last error (Basic.discard_job).
func (e *Engine) Discard(ctx context.Context, id int64, reason string) error {
	return e.ack(ctx, "discard", e.sql.discard, id, reason)
}

// Cancel cancels a job unless it already finished (Basic.cancel_job without an error).
func (e *Engine) Cancel(ctx context.Context, id int64) error {
	return e.ack(ctx, "cancel", e.sql.cancel, id)
}

// Snooze reschedules a job after d and grants it one more attempt (Basic.snooze_job).
func (e *Engine) Snooze(ctx context.Context, id int64, d time.Duration) error {
	if d < 0 {
		return &ValidationError{"snooze", "negative"}
	}
	return e.ack(ctx, "snooze", e.sql.snooze, id, d.Seconds())
}

func (e *Engine) ack(ctx context.Context, op, sql string, id int64, args ...any) error {
	tag, err := e.db.Exec(ctx, sql, append([]any{id}, args...)...)
	if err != nil {
		return fmt.Errorf("oban: %s %d: %w", op, id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("oban: %s %d: %w", op, id, ErrNotFound)
	}
	return nil
}

// Staged is one job the stager made available, with the state it left.
type Staged struct {
	ID    int64
	Queue string
	From  State
}

// Stage moves up to limit due scheduled/retryable jobs to available, in one transaction with
// the notification of every queue that has available work — Oban's Stager on the leader
// (default limit 5000, run every second).
func (e *Engine) Stage(ctx context.Context, limit int) ([]Staged, error) {
	if limit <= 0 {
		return nil, &ValidationError{"limit", fmt.Sprintf("must be > 0, got %d", limit)}
	}
	tx, err := e.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("oban: stage: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, e.sql.stage, limit)
	if err != nil {
		return nil, fmt.Errorf("oban: stage: %w", err)
	}
	var out []Staged
	for rows.Next() {
		var s Staged
		var from string
		if err := rows.Scan(&s.ID, &s.Queue, &from); err != nil {
			rows.Close()
			return nil, fmt.Errorf("oban: stage: scan: %w", err)
		}
		s.From = State(from)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("oban: stage: %w", err)
	}
	if e.notify {
		queues, err := collectStrings(tx.Query(ctx, e.sql.available))
		if err != nil {
			return nil, fmt.Errorf("oban: stage: check available: %w", err)
		}
		if len(queues) > 0 {
			if err := e.notifyQueues(ctx, tx, queues); err != nil {
				return nil, err
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("oban: stage: commit: %w", err)
	}
	return out, nil
}

func collectStrings(rows pgx.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func optTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}
