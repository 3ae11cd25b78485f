package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/resp"
)

// ceilingOp is one engine ceiling: a raw operation timed like an enqueue scenario.
type ceilingOp struct {
	name, what string
	engine     queue.Engine
	conc       int
	op         func(context.Context, int) (int, error)
}

// measureCeilings: PostgreSQL's single-insert durable commits from 1 client and from N through
// the shared pool, and Valkey's raw EVALSHA of a trivial script pipelined through the kit's
// connector by N callers.
func measureCeilings(ctx context.Context, e *env) {
	p := e.p
	table := pgx.Identifier{Schema, "ceiling"}.Sanitize()
	_, terr := e.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (id bigserial PRIMARY KEY, v bigint NOT NULL)`)
	defer e.pool.Exec(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS `+table)
	commit := func(ctx context.Context, _ int) (int, error) {
		_, err := e.pool.Exec(ctx, `INSERT INTO `+table+` (v) VALUES ($1)`, time.Now().UnixNano())
		return 1, err
	}
	for _, c := range []ceilingOp{
		{"pg-commit-1", "INSERT of one row per autocommit transaction, 1 client", queue.Postgres, 1, commit},
		{"pg-commit-n", fmt.Sprintf("INSERT of one row per autocommit transaction, %d clients through the %d-connection pool", p.Producers, p.PGPool), queue.Postgres, p.Producers, commit},
		{"valkey-evalsha", fmt.Sprintf("EVALSHA of `return 1`, %d clients × pipelines of %d, one connector connection (writes nothing, so no AOF fsync)", p.Producers, p.Pipeline), queue.Valkey, p.Producers, evalshaOp(e.admin, p)},
	} {
		cl := Ceiling{Name: c.name, Engine: c.engine, What: c.what, Concurrency: c.conc, Unit: "ops/s"}
		if c.engine == queue.Postgres && terr != nil {
			cl.Err = terr.Error()
		} else {
			e.ceilingRepeats(ctx, &cl, c)
		}
		e.run.Ceilings = append(e.run.Ceilings, cl)
	}
}

func (e *env) ceilingRepeats(ctx context.Context, cl *Ceiling, c ceilingOp) {
	var xs []float64
	var a measure.Acc
	for rep := range e.p.Repeats {
		c0 := e.clock.Read()
		n, err := timed(ctx, e.p.Duration, c.conc, c.op)
		c1 := e.clock.Read()
		if err != nil {
			cl.Err = err.Error()
			return
		}
		a.Add(c0, c1)
		r := float64(n) / c1.At.Sub(c0.At).Seconds()
		xs = append(xs, r)
		e.progress("ceiling %s repeat %d/%d: %.0f ops/s", c.name, rep+1, e.p.Repeats, r)
	}
	cl.Rate, cl.CPU = measure.SpreadOf(xs), a.CPU()
}

// trivialScript is the script of the Valkey ceiling.
var trivialScript = connector.NewScript("emq_bench_ceiling", "return 1")

// evalshaOp runs one pipelined batch of EVALSHAs per call and checks every reply.
func evalshaOp(c *connector.Conn, p Params) func(context.Context, int) (int, error) {
	batches := make([]*connector.Batch, p.Producers)
	dsts := make([][]resp.Value, p.Producers)
	for i := range batches {
		batches[i], dsts[i] = new(connector.Batch), make([]resp.Value, 0, p.Pipeline)
	}
	return func(ctx context.Context, w int) (int, error) {
		b := batches[w]
		b.Reset()
		for range p.Pipeline {
			b.EvalSha(trivialScript, nil)
		}
		vals, err := c.Exec(ctx, b, dsts[w][:0])
		if err != nil {
			return 0, err
		}
		for _, v := range vals {
			if v.Int != 1 {
				return 0, fmt.Errorf("bench: ceiling script replied %v", v)
			}
		}
		return p.Pipeline, nil
	}
}

func postgresInfo(ctx context.Context, pool *pgxpool.Pool, pg *engines.Postgres) (EngineInfo, error) {
	info := EngineInfo{Engine: queue.Postgres, Mode: string(pg.Mode)}
	if err := pool.QueryRow(ctx, `SHOW server_version`).Scan(&info.Version); err != nil {
		return info, fmt.Errorf("postgres version: %w", err)
	}
	rows, err := pool.Query(ctx, `SELECT name, setting || coalesce(unit, '') FROM pg_settings
		WHERE name IN ('synchronous_commit', 'fsync', 'wal_sync_method', 'full_page_writes', 'wal_level',
		               'commit_delay', 'shared_buffers', 'max_connections') ORDER BY name`)
	if err != nil {
		return info, fmt.Errorf("postgres settings: %w", err)
	}
	info.Settings, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var kv [2]string
		err := r.Scan(&kv[0], &kv[1])
		return kv, err
	})
	return info, err
}

func valkeyInfo(ctx context.Context, c *connector.Conn, vk *engines.Valkey) (EngineInfo, error) {
	info := EngineInfo{Engine: queue.Valkey, Mode: string(vk.Mode), Version: vk.Server + " " + vk.Version}
	for _, k := range []string{"appendonly", "appendfsync", "save", "maxmemory-policy"} {
		v, err := c.Do(ctx, "CONFIG", "GET", k)
		if err != nil {
			return info, fmt.Errorf("valkey CONFIG GET %s: %w", k, err)
		}
		if len(v.Elems) != 2 {
			return info, fmt.Errorf("valkey CONFIG GET %s: %d elements", k, len(v.Elems))
		}
		val := string(v.Elems[1].Str)
		if val == "" {
			val = `""`
		}
		info.Settings = append(info.Settings, [2]string{k, val})
	}
	return info, nil
}
