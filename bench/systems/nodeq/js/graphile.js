// graphile-worker on the bench's PostgreSQL, for driver.js. The system "graphile-worker" runs with
// the settings its performance page gives for throughput (24 concurrent jobs, a pool of 25, a
// local queue of 500, batched completions and failures); "graphile-worker-w" with the same at
// the bench's common worker count W.
'use strict';

const { Pool } = require('pg');
const { run, makeWorkerUtils, Logger } = require('graphile-worker');
const { untilZero, inTx, version } = require('./common.js');

const TASK = 'emq_bench';
const silent = new Logger(() => () => {});
let cfg = null; // the preset's worker options
let utils = null;
let pool = null; // business rows and the drain's count
let rows = '';

exports.open = async (req) => {
  const documented = req.system === 'graphile-worker';
  const concurrentJobs = documented ? 24 : req.workers;
  const maxPoolSize = documented ? 25 : Math.min(req.workers + 1, req.pg_pool);
  cfg = {
    connectionString: req.pg_url, schema: `${req.schema}_graphile`, concurrentJobs, maxPoolSize,
    localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0,
  };
  rows = req.rows;
  pool = new Pool({ connectionString: req.pg_url, max: req.pg_pool });
  utils = await makeWorkerUtils({ connectionString: req.pg_url, schema: cfg.schema, maxPoolSize: req.pg_pool, logger: silent });
  if (!req.producer) await utils.migrate(); // the consumer's instance owns the schema
  const why = documented ? 'the settings of its performance page (worker.graphile.org/docs/performance)' : `its performance page's settings at the bench's W=${req.workers}`;
  return {
    version: `graphile-worker ${version('graphile-worker')}, pg ${version('pg')}`,
    settings: [['concurrentJobs', String(concurrentJobs)], ['maxPoolSize', String(maxPoolSize)], ['localQueue.size', '500'],
      ['completeJobBatchDelay', '0'], ['failJobBatchDelay', '0'], ['why', why]],
  };
};

exports.reset = () => pool.query(`TRUNCATE ${cfg.schema}._private_jobs`);

exports.count = async () => Number((await pool.query(`SELECT count(*) AS n FROM ${cfg.schema}._private_jobs`)).rows[0].n);

exports.add = (data) => utils.addJob(TASK, data);

exports.addBulk = (bodies) => utils.addJobs(bodies.map((payload) => ({ identifier: TASK, payload })));

// addWithRow: the business row and the job in one transaction, through add_job's SQL API.
exports.addWithRow = (id, data) => inTx(pool, async (c) => {
  await c.query(`INSERT INTO ${rows} (id, note) VALUES ($1, 'order')`, [id]);
  await c.query(`SELECT ${cfg.schema}.add_job($1, $2::json)`, [TASK, JSON.stringify(data)]);
});

async function start(concurrency, onJob) {
  return run({
    noHandleSignals: true, logger: silent,
    taskList: { [TASK]: async (payload) => { onJob(payload); } },
    preset: { worker: { ...cfg, concurrentJobs: concurrency ?? cfg.concurrentJobs } },
  });
}

// drain: a runner on the backlog; done when graphile-worker has deleted every job (it deletes a
// job on completion, here in batches).
exports.drain = async (_workers, n, started) => {
  let count = 0;
  const runner = await start(undefined, () => { started(); count++; });
  const last = await untilZero(pool, `SELECT count(*) AS n FROM ${cfg.schema}._private_jobs`, [], () => count >= n);
  await runner.stop();
  return last;
};

exports.consume = async (_workers, onJob) => {
  const runner = await start(undefined, onJob);
  return () => runner.stop();
};

exports.close = async () => {
  if (utils) await utils.release();
  if (pool) await pool.end();
};
