package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/bench/systems/busq"
	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/reference/connector"
)

// Schema is the bench's own PostgreSQL schema (the business rows, the bus's outbox and effects,
// the Oban-shaped model's tables); every system's schema is named after it (emq_bench_river …).
// The bench drops and recreates every schema starting with it, and drops them at the end.
const Schema = "emq_bench"

// pgMaxConnections is the bench PostgreSQL's max_connections: the Node.js systems and their
// latency producers hold pools of their own beside the one the Go systems share.
const pgMaxConnections = 400

// env is one axis's shared environment: its engines, the pool and the admin connection every
// scenario family uses, the systems opened on them, and the run the families fill in.
type env struct {
	p       Params
	ax      axis
	prog    io.Writer
	pg      *engines.Postgres
	vk      *engines.Valkey
	pool    *pgxpool.Pool
	admin   *connector.Conn // the bench's own Valkey connection (the ceiling, statistics)
	clock   measure.Clock
	systems []queue.Queue
	bus     *busq.Bus // nil when the bus could not be opened
	run     *Run
	server  serverAcc
	rowID   atomic.Int64
	closers []func()
	// reads narrows systemsFor to the systems a gate re-run measures (nil: every system).
	reads map[string]bool
}

// startEnv starts the axis's engines and opens every system on them; a system that cannot be
// opened is a gap of the run, an engine that cannot start fails the axis.
func startEnv(ctx context.Context, p Params, ax axis, prog io.Writer) (e *env, err error) {
	e = &env{p: p, ax: ax, prog: prog, run: &Run{Axis: ax.name}}
	defer func() {
		if err != nil {
			e.close(ctx)
		}
	}()
	if err := e.startEngines(ctx); err != nil {
		return nil, err
	}
	if err := e.ownSchemas(ctx); err != nil {
		return nil, err
	}
	e.openSystems(ctx)
	return e, nil
}

func (e *env) startEngines(ctx context.Context) error {
	settings := map[string]string{"max_connections": strconv.Itoa(pgMaxConnections)}
	for k, v := range e.ax.pg {
		settings[k] = v
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	pg, err := engines.StartPostgres(sctx, engines.PostgresOptions{Settings: settings})
	if err != nil {
		return err
	}
	e.pg = pg
	e.closers = append(e.closers, func() { _ = pg.Stop() })
	vk, err := engines.StartValkey(sctx, engines.ValkeyOptions{Args: e.ax.valkey})
	if err != nil {
		return err
	}
	e.vk = vk
	e.closers = append(e.closers, func() { _ = vk.Stop() })
	e.clock = measure.Clock{ValkeyPID: vk.PID(), PGPID: pg.PID()}
	pcfg, err := pgxpool.ParseConfig(pg.URL)
	if err != nil {
		return err
	}
	// One pool for every Go Postgres system, the ceilings and the bus's business rows: the same
	// connections for all, as one service's database pool.
	pcfg.MaxConns = int32(e.p.PGPool)
	if e.pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return err
	}
	e.closers = append(e.closers, e.pool.Close)
	if e.admin, err = connector.Dial(ctx, vk.Addr, connector.Options{}); err != nil {
		return fmt.Errorf("valkey: %w", err)
	}
	e.closers = append(e.closers, func() { e.admin.Close() })
	pgInfo, err := postgresInfo(ctx, e.pool, pg)
	if err != nil {
		return err
	}
	vkInfo, err := valkeyInfo(ctx, e.admin, vk)
	if err != nil {
		return err
	}
	e.run.Engines = []EngineInfo{pgInfo, vkInfo}
	return nil
}

// rows is the business table every Postgres system and the bus's outbox pair write to.
var rows = pgx.Identifier{Schema, "orders"}.Sanitize()

// ownSchemas drops every schema the bench owns and creates its own with the business table.
func (e *env) ownSchemas(ctx context.Context) error {
	if err := dropSchemas(ctx, e.pool); err != nil {
		return err
	}
	e.closers = append(e.closers, func() { _ = dropSchemas(context.WithoutCancel(ctx), e.pool) })
	for _, sql := range []string{`CREATE SCHEMA ` + pgx.Identifier{Schema}.Sanitize(),
		`CREATE TABLE ` + rows + ` (id bigint PRIMARY KEY, note text NOT NULL)`} {
		if _, err := e.pool.Exec(ctx, sql); err != nil {
			return fmt.Errorf("bench schema: %w", err)
		}
	}
	return nil
}

func dropSchemas(ctx context.Context, pool *pgxpool.Pool) error {
	rs, err := pool.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname = $1 OR nspname LIKE $1 || '\_%'`, Schema)
	if err != nil {
		return fmt.Errorf("list the bench's schemas: %w", err)
	}
	names, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list the bench's schemas: %w", err)
	}
	for _, s := range names {
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{s}.Sanitize()+` CASCADE`); err != nil {
			return fmt.Errorf("reset schema %s: %w", s, err)
		}
	}
	return nil
}

// openSystems opens every system of the registry; one that cannot be opened is a gap.
func (e *env) openSystems(ctx context.Context) {
	s := queue.Setup{PGURL: e.pg.URL, Pool: e.pool, PGPool: e.p.PGPool, Valkey: e.vk.Addr, Schema: Schema, Rows: rows,
		Workers: e.p.Workers, Producers: e.p.Producers, Root: kitRoot()}
	for _, sys := range registry {
		if e.ax.systems != nil && !slices.Contains(e.ax.systems, sys.name) {
			continue
		}
		fmt.Fprintf(e.prog, "emq-bench: axis %s: opening %s\n", e.ax.name, sys.name)
		q, err := sys.open(ctx, s)
		if err != nil {
			e.run.Gaps = append(e.run.Gaps, fmt.Sprintf("%s: not measured: %v", sys.name, err))
			continue
		}
		e.systems = append(e.systems, q)
		e.closers = append(e.closers, func() { _ = q.Close() })
		if b, ok := q.(*busq.Bus); ok {
			e.bus = b
			e.systems = append(e.systems, busq.Absorb{Bus: b})
		}
	}
}

// close runs every closer, last opened first.
func (e *env) close(ctx context.Context) {
	for _, q := range e.systems {
		_ = q.Reset(ctx)
	}
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	e.closers = nil
}

// kitRoot is the kit's checkout: the bench runs from it (make bench) or below it (go test).
func kitRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "ci", "provision-node-systems.sh")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}
