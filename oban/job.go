// Package oban is an Oban-shaped job queue on PostgreSQL: the oban_jobs table of Oban's
// migration v12 and the SQL of Oban 2.18's Basic engine (insert, fetch, ack, stage), written in
// Go over pgx v5. It exists so the kit can measure the transactional-enqueue rival faithfully;
// it is not a port of Oban's runtime (no producers, leadership or plugins). See README.md.
package oban

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the engine needs from a connection: *pgxpool.Pool, *pgx.Conn and pgx.Tx all fit.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// State is a value of the oban_job_state enum.
type State string

// The oban_job_state values (v01, plus cancelled from v09).
const (
	Available State = "available"
	Scheduled State = "scheduled"
	Executing State = "executing"
	Retryable State = "retryable"
	Completed State = "completed"
	Discarded State = "discarded"
	Cancelled State = "cancelled"
)

// Defaults and limits of Oban.Job's changeset (2.18).
const (
	DefaultQueue       = "default"
	DefaultMaxAttempts = 20
	MaxPriority        = 9
)

// Job is a job to insert. Zero values take Oban's defaults.
type Job struct {
	// ID, when non-zero, is used instead of the bigserial; a second insert of the same ID is
	// the conflict ON CONFLICT DO NOTHING swallows.
	ID          int64
	Queue       string          // default "default"
	Worker      string          // required
	Args        json.RawMessage // a JSON object; nil → {}
	Meta        json.RawMessage // a JSON object; nil → {}
	Tags        []string
	MaxAttempts int // default 20
	Priority    int // 0 (highest) … 9
	// ScheduledAt, when set, makes the job "scheduled" (as Oban.Job does for any scheduled_at);
	// the stager makes it available once due.
	ScheduledAt time.Time
}

// Fetched is a job claimed by Fetch: the row as the fetch's UPDATE … RETURNING left it.
type Fetched struct {
	ID          int64
	State       State
	Queue       string
	Worker      string
	Args        json.RawMessage
	Meta        json.RawMessage
	Tags        []string
	Attempt     int
	MaxAttempts int
	Priority    int
	InsertedAt  time.Time
	ScheduledAt time.Time
	AttemptedAt time.Time
	AttemptedBy []string
}

// Inserted reports one insert: Conflict is true when ON CONFLICT DO NOTHING swallowed the row.
type Inserted struct {
	ID       int64
	State    State
	Conflict bool
}

// ErrInvalid is matched (errors.Is) by every *ValidationError.
var ErrInvalid = errors.New("oban: invalid")

// ErrNotFound is returned by an ack whose id matches no row it may change.
var ErrNotFound = errors.New("oban: job not found")

// ValidationError is bad input refused before any SQL is sent.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string { return "oban: invalid " + e.Field + ": " + e.Reason }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// normalize applies Oban.Job's defaults and validations (changeset rules, plus the table's
// length checks so bad input never reaches the server as a constraint violation).
func (j Job) normalize() (Job, error) {
	if j.Queue == "" {
		j.Queue = DefaultQueue
	}
	if j.MaxAttempts == 0 {
		j.MaxAttempts = DefaultMaxAttempts
	}
	if len(j.Args) == 0 {
		j.Args = json.RawMessage(`{}`)
	}
	if len(j.Meta) == 0 {
		j.Meta = json.RawMessage(`{}`)
	}
	if j.Tags == nil {
		j.Tags = []string{}
	}
	switch {
	case j.Worker == "":
		return j, &ValidationError{"worker", "required"}
	case len([]rune(j.Worker)) >= 128:
		return j, &ValidationError{"worker", "must be shorter than 128 characters"}
	case len([]rune(j.Queue)) >= 128:
		return j, &ValidationError{"queue", "must be shorter than 128 characters"}
	case j.MaxAttempts < 0:
		return j, &ValidationError{"max_attempts", fmt.Sprintf("must be > 0, got %d", j.MaxAttempts)}
	case j.Priority < 0 || j.Priority > MaxPriority:
		return j, &ValidationError{"priority", fmt.Sprintf("must be 0..%d, got %d", MaxPriority, j.Priority)}
	case j.ID < 0:
		return j, &ValidationError{"id", fmt.Sprintf("must be positive, got %d", j.ID)}
	}
	if err := checkObject("args", j.Args); err != nil {
		return j, err
	}
	if err := checkObject("meta", j.Meta); err != nil {
		return j, err
	}
	return j, nil
}

func checkObject(field string, raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return &ValidationError{field, "must be a JSON object"}
	}
	return nil
}

func (j Job) state() State {
	if j.ScheduledAt.IsZero() {
		return Available
	}
	return Scheduled
}
