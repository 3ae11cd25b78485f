package oban_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/echomq/kit/oban"
)

func TestMigrateCreatesV12Schema(t *testing.T) {
	t.Parallel()
	f := newFixture(t, oban.Config{})
	ctx := context.Background()
	// Idempotent: a second run changes nothing and does not fail.
	if err := oban.MigratePrefix(ctx, f.pool, f.prefix); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if v, err := oban.MigratedVersion(ctx, f.pool, f.prefix); err != nil || v != 12 {
		t.Fatalf("migrated version = %d, %v; want 12", v, err)
	}

	var states []string
	if err := f.pool.QueryRow(ctx, `SELECT enum_range(NULL::`+pgx.Identifier{f.prefix, "oban_job_state"}.Sanitize()+`)::text[]`).Scan(&states); err != nil {
		t.Fatal(err)
	}
	want := []string{"available", "scheduled", "executing", "retryable", "completed", "discarded", "cancelled"}
	if !slices.Equal(states, want) {
		t.Errorf("enum = %v, want %v", states, want)
	}

	cols := map[string]string{}
	rows, _ := f.pool.Query(ctx, `SELECT column_name, data_type || ':' || is_nullable FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = 'oban_jobs'`, f.prefix)
	for rows.Next() {
		var n, ty string
		if err := rows.Scan(&n, &ty); err != nil {
			t.Fatal(err)
		}
		cols[n] = ty
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	wantCols := map[string]string{
		"id": "bigint:NO", "state": "USER-DEFINED:NO", "queue": "text:NO", "worker": "text:NO",
		"args": "jsonb:NO", "errors": "ARRAY:NO", "attempt": "integer:NO", "max_attempts": "integer:NO",
		"inserted_at": "timestamp without time zone:NO", "scheduled_at": "timestamp without time zone:NO",
		"attempted_at": "timestamp without time zone:YES", "completed_at": "timestamp without time zone:YES",
		"attempted_by": "ARRAY:YES", "discarded_at": "timestamp without time zone:YES",
		"priority": "integer:NO", "tags": "ARRAY:YES", "meta": "jsonb:YES",
		"cancelled_at": "timestamp without time zone:YES",
	}
	if len(cols) != len(wantCols) {
		t.Errorf("columns = %v, want %v", cols, wantCols)
	}
	for n, ty := range wantCols {
		if cols[n] != ty {
			t.Errorf("column %s = %q, want %q", n, cols[n], ty)
		}
	}

	var checks []string
	if err := f.pool.QueryRow(ctx, `SELECT array_agg(conname::text ORDER BY conname) FROM pg_constraint
		WHERE conrelid = ($1 || '.oban_jobs')::regclass AND contype = 'c'`, f.prefix).Scan(&checks); err != nil {
		t.Fatal(err)
	}
	wantChecks := []string{"attempt_range", "non_negative_priority", "positive_max_attempts", "queue_length", "worker_length"}
	if !slices.Equal(checks, wantChecks) {
		t.Errorf("check constraints = %v, want %v", checks, wantChecks)
	}

	idx := map[string]string{}
	rows, _ = f.pool.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'oban_jobs'`, f.prefix)
	for rows.Next() {
		var n, d string
		if err := rows.Scan(&n, &d); err != nil {
			t.Fatal(err)
		}
		idx[n] = d
	}
	for name, frag := range map[string]string{
		"oban_jobs_state_queue_priority_scheduled_at_id_index": "btree (state, queue, priority, scheduled_at, id)",
		"oban_jobs_args_index":                                 "gin (args)",
		"oban_jobs_meta_index":                                 "gin (meta)",
		"oban_jobs_pkey":                                       "btree (id)",
	} {
		if d, ok := idx[name]; !ok || !strings.Contains(d, frag) {
			t.Errorf("index %s = %q, want it to contain %q", name, d, frag)
		}
	}
	if len(idx) != 4 {
		t.Errorf("indexes = %v, want exactly 4", idx)
	}

	// The checks bite on rows that bypass the Go validation.
	for name, sql := range map[string]string{
		"worker_length":         `INSERT INTO ` + f.table() + ` (worker) VALUES ('')`,
		"queue_length":          `INSERT INTO ` + f.table() + ` (worker, queue) VALUES ('W', '')`,
		"positive_max_attempts": `INSERT INTO ` + f.table() + ` (worker, max_attempts) VALUES ('W', 0)`,
		"attempt_range":         `INSERT INTO ` + f.table() + ` (worker, attempt, max_attempts) VALUES ('W', 3, 2)`,
		"non_negative_priority": `INSERT INTO ` + f.table() + ` (worker, priority) VALUES ('W', -1)`,
	} {
		_, err := f.pool.Exec(ctx, sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != name {
			t.Errorf("%s: got %v, want check violation of %s", name, err, name)
		}
	}
}

func TestInsertAndDuplicate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, oban.Config{})
	ctx := context.Background()

	in, err := f.eng.Insert(ctx, oban.Job{Worker: "W", Args: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if in.ID <= 0 || in.State != oban.Available || in.Conflict {
		t.Fatalf("insert = %+v", in)
	}
	var queue, args string
	var maxAtt, prio int
	if err := f.pool.QueryRow(ctx, `SELECT queue, args::text, max_attempts, priority FROM `+f.table()+` WHERE id=$1`, in.ID).
		Scan(&queue, &args, &maxAtt, &prio); err != nil {
		t.Fatal(err)
	}
	if queue != "default" || args != `{"n": 1}` || maxAtt != 20 || prio != 0 {
		t.Errorf("defaults: queue=%q args=%q max_attempts=%d priority=%d", queue, args, maxAtt, prio)
	}

	// Same explicit id twice: the second is swallowed by ON CONFLICT DO NOTHING.
	first, err := f.eng.Insert(ctx, oban.Job{ID: 1_000_000, Worker: "W", Queue: "q"})
	if err != nil || first.Conflict || first.ID != 1_000_000 {
		t.Fatalf("first = %+v, %v", first, err)
	}
	dup, err := f.eng.Insert(ctx, oban.Job{ID: 1_000_000, Worker: "Other", Queue: "q2"})
	if err != nil || !dup.Conflict {
		t.Fatalf("dup = %+v, %v; want conflict", dup, err)
	}
	if n := f.count(t, `id = 1000000 AND worker = 'W' AND queue = 'q'`); n != 1 {
		t.Errorf("after dup: %d matching rows, want the original only", n)
	}

	sch, err := f.eng.Insert(ctx, oban.Job{Worker: "W", ScheduledAt: time.Now().Add(time.Hour)})
	if err != nil || sch.State != oban.Scheduled {
		t.Fatalf("scheduled insert = %+v, %v", sch, err)
	}
}

func TestInsertRejectsBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t, oban.Config{})
	ctx := context.Background()
	long := string(make([]byte, 128))
	for name, j := range map[string]oban.Job{
		"no worker":     {},
		"long worker":   {Worker: long},
		"long queue":    {Worker: "W", Queue: long},
		"args array":    {Worker: "W", Args: json.RawMessage(`[1]`)},
		"args garbage":  {Worker: "W", Args: json.RawMessage(`{`)},
		"meta scalar":   {Worker: "W", Meta: json.RawMessage(`3`)},
		"priority 10":   {Worker: "W", Priority: 10},
		"priority -1":   {Worker: "W", Priority: -1},
		"max_attempts":  {Worker: "W", MaxAttempts: -2},
		"negative id":   {Worker: "W", ID: -5},
		"args null obj": {Worker: "W", Args: json.RawMessage(`null`)},
	} {
		_, err := f.eng.Insert(ctx, j)
		var ve *oban.ValidationError
		if !errors.Is(err, oban.ErrInvalid) || !errors.As(err, &ve) {
			t.Errorf("%s: err = %v, want a *ValidationError", name, err)
		}
	}
	if _, err := f.eng.InsertAll(ctx, []oban.Job{{Worker: "W"}, {}}); !errors.Is(err, oban.ErrInvalid) {
		t.Errorf("insert_all with a bad job: %v", err)
	}
	if n := f.count(t, `true`); n != 0 {
		t.Errorf("%d rows written by refused inserts", n)
	}
	if _, err := oban.New(f.pool, oban.Config{Prefix: "bad-prefix; drop"}); !errors.Is(err, oban.ErrInvalid) {
		t.Errorf("bad prefix: %v", err)
	}
}

func TestInsertAll(t *testing.T) {
	t.Parallel()
	f := newFixture(t, oban.Config{Notify: true})
	ctx := context.Background()
	jobs := make([]oban.Job, 100)
	for i := range jobs {
		jobs[i] = oban.Job{Worker: "W", Queue: fmt.Sprintf("q%d", i%3), Args: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	jobs[7].ScheduledAt = time.Now().Add(time.Minute)
	got, err := f.eng.InsertAll(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 100 {
		t.Fatalf("inserted %d, want 100", len(got))
	}
	ids := map[int64]bool{}
	for _, g := range got {
		ids[g.ID] = true
	}
	if len(ids) != 100 || f.count(t, `true`) != 100 || f.count(t, `state = 'scheduled'`) != 1 {
		t.Fatalf("distinct ids %d, rows %d", len(ids), f.count(t, `true`))
	}
	// Explicit ids: existing ones are swallowed, new ones land.
	got, err = f.eng.InsertAll(ctx, []oban.Job{{ID: 5_000_001, Worker: "W"}, {ID: 5_000_001, Worker: "W"}, {ID: 5_000_002, Worker: "W"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || f.count(t, `true`) != 102 {
		t.Fatalf("with a duplicate: returned %d, rows %d; want 2 and 102", len(got), f.count(t, `true`))
	}
}

func TestFetchConcurrentNeverDoubleClaims(t *testing.T) {
	t.Parallel()
	f := newFixture(t, oban.Config{})
	ctx := context.Background()
	const total = 600
	jobs := make([]oban.Job, total)
	for i := range jobs {
		jobs[i] = oban.Job{Worker: "W", Queue: "work"}
	}
	if _, err := f.eng.InsertAll(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	const fetchers = 8
	var mu sync.Mutex
	claims := map[int64]int{}
	var problems []string
	var wg sync.WaitGroup
	for w := range fetchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := fmt.Sprintf("node-%d", w)
			for {
				got, err := f.eng.Fetch(ctx, "work", 7, node)
				mu.Lock()
				if err != nil {
					problems = append(problems, err.Error())
				}
				if len(got) > 7 {
					problems = append(problems, fmt.Sprintf("fetched %d > demand 7", len(got)))
				}
				for _, j := range got {
					claims[j.ID]++
					if j.State != oban.Executing || j.Attempt != 1 || len(j.AttemptedBy) != 2 || j.AttemptedBy[0] != node {
						problems = append(problems, fmt.Sprintf("claimed row %+v", j))
					}
				}
				mu.Unlock()
				if err != nil || len(got) == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(problems) > 0 {
		t.Errorf("%d problems, first: %s", len(problems), problems[0])
	}
	if len(claims) != total {
		t.Errorf("claimed %d distinct jobs, want %d", len(claims), total)
	}
	for id, n := range claims {
		if n != 1 {
			t.Errorf("job %d claimed %d times", id, n)
		}
	}
	if n := f.count(t, `state = 'executing' AND attempt = 1 AND attempted_at IS NOT NULL`); n != total {
		t.Errorf("%d rows executing with attempt 1, want %d", n, total)
	}
}

func TestFetchOrderAndQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, oban.Config{})
	ctx := context.Background()
	mk := func(j oban.Job) int64 {
		in, err := f.eng.Insert(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		return in.ID
	}
	low := mk(oban.Job{Worker: "W", Queue: "a", Priority: 3})
	hi1 := mk(oban.Job{Worker: "W", Queue: "a", Priority: 0})
	hi2 := mk(oban.Job{Worker: "W", Queue: "a", Priority: 0})
	other := mk(oban.Job{Worker: "W", Queue: "b"})
	// An older scheduled_at within the same priority goes first.
	old := mk(oban.Job{Worker: "W", Queue: "a", Priority: 3})
	if _, err := f.pool.Exec(ctx, `UPDATE `+f.table()+` SET scheduled_at = scheduled_at - interval '1 hour' WHERE id = $1`, old); err != nil {
		t.Fatal(err)
	}
	var order []int64
	for {
		got, err := f.eng.Fetch(ctx, "a", 1, "n")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		order = append(order, got[0].ID)
	}
	if want := []int64{hi1, hi2, old, low}; !slices.Equal(order, want) {
		t.Errorf("fetch order = %v, want %v", order, want)
	}
	if r := f.row(t, other); r.State != "available" {
		t.Errorf("queue b job state %s after fetching a", r.State)
	}
	if _, err := f.eng.Fetch(ctx, "a", 0, "n"); !errors.Is(err, oban.ErrInvalid) {
		t.Errorf("demand 0: %v", err)
	}
}

func TestAttemptsAndMaxAttempts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, oban.Config{})
	ctx := context.Background()
	in, err := f.eng.Insert(ctx, oban.Job{Worker: "W", Queue: "r", MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	fetch := func() []oban.Fetched {
		t.Helper()
		got, err := f.eng.Fetch(ctx, "r", 10, "n")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := fetch()
	if len(got) != 1 || got[0].Attempt != 1 {
		t.Fatalf("first fetch = %+v", got)
	}
	st, err := f.eng.Retry(ctx, got[0], "boom 1", 0)
	if err != nil || st != oban.Retryable {
		t.Fatalf("retry = %s, %v", st, err)
	}
	if r := f.row(t, in.ID); r.State != "retryable" || r.Errors != 1 {
		t.Fatalf("after retry: %+v", r)
	}
	if len(fetch()) != 0 {
		t.Fatal("a retryable job was fetched before staging")
	}
	staged, err := f.eng.Stage(ctx, 100)
	if err != nil || len(staged) != 1 || staged[0].From != oban.Retryable {
		t.Fatalf("stage = %+v, %v", staged, err)
	}
	got = fetch()
	if len(got) != 1 || got[0].Attempt != 2 {
		t.Fatalf("second fetch = %+v", got)
	}
	// The last attempt failing discards instead of retrying, as Oban's executor does.
	st, err = f.eng.Retry(ctx, got[0], "boom 2", 0)
	if err != nil || st != oban.Discarded {
		t.Fatalf("final retry = %s, %v", st, err)
	}
	if r := f.row(t, in.ID); r.State != "discarded" || r.Errors != 2 || !r.Discarded || r.Attempt != 2 {
		t.Fatalf("after exhaustion: %+v", r)
	}
	var errs []string
	if err := f.pool.QueryRow(ctx, `SELECT array_agg(e->>'error' ORDER BY (e->>'attempt')::int) FROM `+f.table()+`, unnest(errors) e WHERE id=$1`, in.ID).Scan(&errs); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(errs, []string{"boom 1", "boom 2"}) {
		t.Errorf("errors = %v", errs)
	}

	// A row made available again at attempt = max_attempts is never claimed: the fetch's
	// attempt < max_attempts guard holds even though the CTE selects it.
	if _, err := f.pool.Exec(ctx, `UPDATE `+f.table()+` SET state = 'available' WHERE id = $1`, in.ID); err != nil {
		t.Fatal(err)
	}
	if got := fetch(); len(got) != 0 {
		t.Fatalf("fetched an exhausted job: %+v", got)
	}
	if r := f.row(t, in.ID); r.State != "available" || r.Attempt != 2 {
		t.Errorf("exhausted row changed: %+v", r)
	}
}

func TestAcks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, oban.Config{})
	ctx := context.Background()
	var ids []int64
	for range 5 {
		in, err := f.eng.Insert(ctx, oban.Job{Worker: "W", Queue: "k"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.ID)
	}
	got, err := f.eng.Fetch(ctx, "k", 5, "n")
	if err != nil || len(got) != 5 {
		t.Fatalf("fetch = %d, %v", len(got), err)
	}
	if err := f.eng.Complete(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := f.eng.Discard(ctx, ids[1], "bad input"); err != nil {
		t.Fatal(err)
	}
	if err := f.eng.Cancel(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	st, err := f.eng.Retry(ctx, got[3], "later", 90*time.Second)
	if err != nil || st != oban.Retryable {
		t.Fatal(st, err)
	}
	if err := f.eng.Snooze(ctx, ids[4], time.Minute); err != nil {
		t.Fatal(err)
	}

	if r := f.row(t, ids[0]); r.State != "completed" || !r.Completed {
		t.Errorf("complete: %+v", r)
	}
	if r := f.row(t, ids[1]); r.State != "discarded" || !r.Discarded || r.Errors != 1 {
		t.Errorf("discard: %+v", r)
	}
	if r := f.row(t, ids[2]); r.State != "cancelled" || !r.Cancelled {
		t.Errorf("cancel: %+v", r)
	}
	var delay float64
	if err := f.pool.QueryRow(ctx, `SELECT extract(epoch FROM scheduled_at - attempted_at) FROM `+f.table()+` WHERE id=$1`, ids[3]).Scan(&delay); err != nil {
		t.Fatal(err)
	}
	if r := f.row(t, ids[3]); r.State != "retryable" || delay < 89 || delay > 91 {
		t.Errorf("retry: %+v, due %.1fs after the attempt, want ~90", r, delay)
	}
	if r := f.row(t, ids[4]); r.State != "scheduled" || r.MaxAttempts != 21 {
		t.Errorf("snooze: %+v", r)
	}
	// A finished job cannot be cancelled; an unknown id is reported, not ignored.
	if err := f.eng.Cancel(ctx, ids[0]); !errors.Is(err, oban.ErrNotFound) {
		t.Errorf("cancel completed: %v", err)
	}
	if err := f.eng.Complete(ctx, 987654321); !errors.Is(err, oban.ErrNotFound) {
		t.Errorf("complete unknown: %v", err)
	}
	if r := f.row(t, ids[0]); r.State != "completed" {
		t.Errorf("completed job changed by cancel: %+v", r)
	}
}

// listen opens a dedicated connection LISTENing on the prefix's insert channel.
func listen(t *testing.T, f *fixture) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), pgURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	if _, err := conn.Exec(context.Background(), `LISTEN `+pgx.Identifier{f.prefix + ".oban_insert"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return conn
}

// noticeDue is how long a notice that must come is waited for: it returns as the notice comes,
// so only a notice that never comes costs it.
const noticeDue = time.Minute

// waitNotice waits up to d for a notice. A notice that must not come is watched for a short d:
// a busy machine can only hide a wrong notice that way, never fail a right run.
func waitNotice(t *testing.T, conn *pgx.Conn, d time.Duration) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		return "", false
	}
	return n.Payload, true
}

func TestStagerAndNotify(t *testing.T) {
	t.Parallel()
	f := newFixture(t, oban.Config{Notify: true})
	ctx := context.Background()
	conn := listen(t, f)

	if _, err := f.eng.Insert(ctx, oban.Job{Worker: "W", Queue: "now"}); err != nil {
		t.Fatal(err)
	}
	if p, ok := waitNotice(t, conn, noticeDue); !ok || p != `{"queue":"now"}` {
		t.Fatalf("insert notice = %q, %v", p, ok)
	}
	// A scheduled insert does not notify (Oban notifies only for available jobs).
	future, err := f.eng.Insert(ctx, oban.Job{Worker: "W", Queue: "later", ScheduledAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var due []int64
	for range 3 {
		in, err := f.eng.Insert(ctx, oban.Job{Worker: "W", Queue: "due", ScheduledAt: time.Now().Add(-time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		due = append(due, in.ID)
	}
	if p, ok := waitNotice(t, conn, 200*time.Millisecond); ok {
		t.Fatalf("notice for a scheduled insert: %q", p)
	}

	staged, err := f.eng.Stage(ctx, 2) // the limit holds
	if err != nil || len(staged) != 2 {
		t.Fatalf("stage(2) = %+v, %v", staged, err)
	}
	staged2, err := f.eng.Stage(ctx, 100)
	if err != nil || len(staged2) != 1 {
		t.Fatalf("second stage = %+v, %v", staged2, err)
	}
	for _, s := range append(staged, staged2...) {
		if s.Queue != "due" || s.From != oban.Scheduled || !slices.Contains(due, s.ID) {
			t.Errorf("staged %+v", s)
		}
	}
	if r := f.row(t, future.ID); r.State != "scheduled" {
		t.Errorf("future job staged early: %+v", r)
	}
	// The stager notifies every queue with available work, "now" and "due": both are waited
	// for, however late they come (a 300 ms silence ended the reading on a busy machine).
	seen := map[string]bool{}
	for !seen[`{"queue":"due"}`] || !seen[`{"queue":"now"}`] {
		p, ok := waitNotice(t, conn, noticeDue)
		if !ok {
			t.Errorf("stager notices = %v", seen)
			break
		}
		seen[p] = true
	}
	if n := f.count(t, `queue = 'due' AND state = 'available'`); n != 3 {
		t.Errorf("%d due jobs available, want 3", n)
	}
}

func TestNotifyOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, oban.Config{Notify: false})
	conn := listen(t, f)
	if _, err := f.eng.Insert(context.Background(), oban.Job{Worker: "W"}); err != nil {
		t.Fatal(err)
	}
	if p, ok := waitNotice(t, conn, 200*time.Millisecond); ok {
		t.Fatalf("notice with Notify off: %q", p)
	}
}

func TestInsertTxSharesTheBusinessTransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t, oban.Config{Notify: true})
	ctx := context.Background()
	orders := pgx.Identifier{f.prefix, "orders"}.Sanitize()
	if _, err := f.pool.Exec(ctx, `CREATE TABLE `+orders+` (id bigint PRIMARY KEY, note text)`); err != nil {
		t.Fatal(err)
	}
	conn := listen(t, f)

	run := func(orderID int64, commit bool) int64 {
		tx, err := f.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, `INSERT INTO `+orders+` VALUES ($1, 'x')`, orderID); err != nil {
			t.Fatal(err)
		}
		in, err := f.eng.InsertTx(ctx, tx, oban.Job{Worker: "Ship", Queue: "ship", Args: json.RawMessage(fmt.Sprintf(`{"order":%d}`, orderID))})
		if err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		} else if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		return in.ID
	}
	orderRows := func(id int64) int {
		var n int
		if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM `+orders+` WHERE id=$1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	rolled := run(1, false)
	if orderRows(1) != 0 || f.count(t, `id = $1`, rolled) != 0 {
		t.Fatalf("rollback left order=%d job=%d", orderRows(1), f.count(t, `id = $1`, rolled))
	}
	if p, ok := waitNotice(t, conn, 200*time.Millisecond); ok {
		t.Fatalf("a rolled-back insert notified: %q", p)
	}
	kept := run(2, true)
	if orderRows(2) != 1 || f.count(t, `id = $1 AND args @> '{"order":2}'`, kept) != 1 {
		t.Fatalf("commit: order=%d job=%d", orderRows(2), f.count(t, `id = $1`, kept))
	}
	if p, ok := waitNotice(t, conn, noticeDue); !ok || p != `{"queue":"ship"}` {
		t.Fatalf("commit notice = %q, %v", p, ok)
	}
	if _, err := f.eng.InsertTx(ctx, nil, oban.Job{Worker: "W"}); !errors.Is(err, oban.ErrInvalid) {
		t.Errorf("nil tx: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	zero := func() float64 { return 0 }
	almost := func() float64 { return 0.999999 }
	for _, c := range []struct {
		attempt, max int
		rnd          func() float64
		want         time.Duration
	}{
		{1, 20, zero, 17 * time.Second},
		{5, 20, zero, 47 * time.Second},
		{1, 20, almost, 18 * time.Second},          // 17 + trunc(1.7)
		{10, 20, almost, 1142 * time.Second},       // 1039 + trunc(103.9)
		{50, 100, zero, (15 + 1024) * time.Second}, // clamped: round(50/100*20) = 10
	} {
		if got := oban.Backoff(c.attempt, c.max, c.rnd); got != c.want {
			t.Errorf("Backoff(%d, %d) = %v, want %v", c.attempt, c.max, got, c.want)
		}
	}
}
