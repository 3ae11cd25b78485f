package oban

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// SchemaVersion is the Oban Postgres migration this schema reproduces. Oban records the
// migrated version as the table comment; so does Migrate.
const SchemaVersion = 12

// DefaultPrefix is the schema Oban uses unless told otherwise.
const DefaultPrefix = "public"

var prefixRe = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func checkPrefix(prefix string) error {
	if !prefixRe.MatchString(prefix) {
		return &ValidationError{Field: "prefix", Reason: fmt.Sprintf("%q is not a plain lower-case identifier", prefix)}
	}
	return nil
}

// migrateSQL is the end state of Oban's migrations v01–v12 written as one idempotent script
// (see README.md for which migration contributed what). %[1]s is the quoted schema, %[2]s the
// schema as a string literal.
const migrateSQL = `
CREATE SCHEMA IF NOT EXISTS %[1]s;

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_type
                 WHERE typname = 'oban_job_state' AND typnamespace = %[2]s::regnamespace) THEN
    CREATE TYPE %[1]s.oban_job_state AS ENUM
      ('available', 'scheduled', 'executing', 'retryable', 'completed', 'discarded', 'cancelled');
  END IF;
END$$;

CREATE TABLE IF NOT EXISTS %[1]s.oban_jobs (
  id           bigserial PRIMARY KEY,
  state        %[1]s.oban_job_state NOT NULL DEFAULT 'available',
  queue        text NOT NULL DEFAULT 'default',
  worker       text NOT NULL,
  args         jsonb NOT NULL DEFAULT '{}'::jsonb,
  errors       jsonb[] NOT NULL DEFAULT ARRAY[]::jsonb[],
  attempt      integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL DEFAULT 20,
  inserted_at  timestamp without time zone NOT NULL DEFAULT timezone('UTC', now()),
  scheduled_at timestamp without time zone NOT NULL DEFAULT timezone('UTC', now()),
  attempted_at timestamp without time zone,
  completed_at timestamp without time zone,
  attempted_by text[],
  discarded_at timestamp without time zone,
  priority     integer NOT NULL DEFAULT 0,
  tags         text[] DEFAULT ARRAY[]::text[],
  meta         jsonb DEFAULT '{}'::jsonb,
  cancelled_at timestamp without time zone,
  CONSTRAINT worker_length CHECK (char_length(worker) > 0 AND char_length(worker) < 128),
  CONSTRAINT queue_length CHECK (char_length(queue) > 0 AND char_length(queue) < 128),
  CONSTRAINT positive_max_attempts CHECK (max_attempts > 0),
  CONSTRAINT attempt_range CHECK (attempt BETWEEN 0 AND max_attempts)
);

-- v12 adds this one NOT VALID, which only ALTER TABLE can express.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_constraint
                 WHERE conname = 'non_negative_priority'
                   AND conrelid = (%[2]s || '.oban_jobs')::regclass) THEN
    ALTER TABLE %[1]s.oban_jobs ADD CONSTRAINT non_negative_priority CHECK (priority >= 0) NOT VALID;
  END IF;
END$$;

CREATE INDEX IF NOT EXISTS oban_jobs_state_queue_priority_scheduled_at_id_index
  ON %[1]s.oban_jobs (state, queue, priority, scheduled_at, id);
CREATE INDEX IF NOT EXISTS oban_jobs_args_index ON %[1]s.oban_jobs USING gin (args);
CREATE INDEX IF NOT EXISTS oban_jobs_meta_index ON %[1]s.oban_jobs USING gin (meta);

COMMENT ON TABLE %[1]s.oban_jobs IS '%[3]d';
`

// Migrate creates Oban's v12 schema in the "public" schema. It is idempotent.
func Migrate(ctx context.Context, db DB) error {
	return MigratePrefix(ctx, db, DefaultPrefix)
}

// MigratePrefix creates Oban's v12 schema under the given Postgres schema (Oban's "prefix").
// It is idempotent and safe to run from concurrent processes.
func MigratePrefix(ctx context.Context, db DB, prefix string) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("oban: migrate %s: begin: %w", prefix, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// Concurrent CREATE ... IF NOT EXISTS can still collide in the catalog; serialise migrators.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('oban.migrate'))`); err != nil {
		return fmt.Errorf("oban: migrate %s: lock: %w", prefix, err)
	}
	q := pgx.Identifier{prefix}.Sanitize()
	lit := "'" + prefix + "'" // safe: checkPrefix admits only [a-z0-9_]
	if _, err := tx.Exec(ctx, fmt.Sprintf(migrateSQL, q, lit, SchemaVersion)); err != nil {
		return fmt.Errorf("oban: migrate %s: %w", prefix, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("oban: migrate %s: commit: %w", prefix, err)
	}
	return nil
}

// MigratedVersion reads the version Migrate recorded in the table comment (0 if absent).
func MigratedVersion(ctx context.Context, db DB, prefix string) (int, error) {
	if err := checkPrefix(prefix); err != nil {
		return 0, err
	}
	var v *string
	err := db.QueryRow(ctx,
		`SELECT obj_description(to_regclass($1 || '.oban_jobs'), 'pg_class')`, prefix).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("oban: read migrated version: %w", err)
	}
	if v == nil {
		return 0, nil
	}
	var n int
	if _, err := fmt.Sscanf(*v, "%d", &n); err != nil {
		return 0, fmt.Errorf("oban: migrated version comment %q: %w", *v, err)
	}
	return n, nil
}
