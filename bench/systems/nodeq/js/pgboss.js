// pg-boss on the bench's PostgreSQL, for driver.js: batched fetch (batchSize 500, two fetch loops,
// a full batch fetches again at once), batched insert, LISTEN/NOTIFY wake-ups.
'use strict';

const { Pool } = require('pg');
const { PgBoss } = require('pg-boss');
const { untilZero, inTx, version } = require('./common.js');

const QUEUE = 'emq_bench';
const BATCH = 500;
const LOOPS = 2;
let boss = null;
let pool = null;
let schema = '';
let rows = '';

const queueOpts = { notify: true };
const workOpts = { batchSize: BATCH, localConcurrency: LOOPS, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 };

exports.open = async (req) => {
  schema = `${req.schema}_pgboss`;
  rows = req.rows;
  pool = new Pool({ connectionString: req.pg_url, max: req.pg_pool });
  // A producer process only sends: no maintenance, no migration (the consumer's instance owns
  // both), as pg-boss's constructor options allow.
  const role = req.producer ? { supervise: false, migrate: false } : {};
  boss = new PgBoss({ connectionString: req.pg_url, schema, max: req.pg_pool, useListenNotify: true, schedule: false, ...role });
  boss.on('error', (e) => process.stderr.write(`pg-boss: ${e}\n`));
  await boss.start();
  if (!req.producer) await boss.createQueue(QUEUE, queueOpts);
  return {
    version: `pg-boss ${version('pg-boss')}, pg ${version('pg')}`,
    settings: [['work batchSize', String(BATCH)], ['localConcurrency (fetch loops)', String(LOOPS)], ['burstWhenBatchFull', 'true'],
      ['pollingIntervalSeconds', '0.5 (the minimum)'], ['useListenNotify + queue notify', 'true'], ['schedule', 'false (no cron)'],
      ['pool max', String(req.pg_pool)], ['batches', 'insert()']],
  };
};

exports.reset = async () => {
  await boss.deleteQueue(QUEUE);
  await boss.createQueue(QUEUE, queueOpts);
};

exports.count = async () => Number((await pool.query(`SELECT count(*) AS n FROM ${schema}.job WHERE name = $1`, [QUEUE])).rows[0].n);

exports.add = (data) => boss.send(QUEUE, data);

exports.addBulk = (bodies) => boss.insert(QUEUE, bodies.map((data) => ({ data })));

// addWithRow: the business row and the job in one transaction (send with the transaction's db).
exports.addWithRow = (id, data) => inTx(pool, async (c) => {
  await c.query(`INSERT INTO ${rows} (id, note) VALUES ($1, 'order')`, [id]);
  await boss.send(QUEUE, data, { db: { executeSql: (text, values) => c.query(text, values) } });
});

// Handlers get a batch; each job of it starts when the batch handler is called, and pg-boss
// completes the batch when the handler returns.
async function work(onJob) {
  return boss.work(QUEUE, workOpts, async (jobs) => {
    for (const j of jobs) onJob(j.data);
  });
}

exports.drain = async (_workers, n, started) => {
  let count = 0;
  const id = await work(() => { started(); count++; });
  const last = await untilZero(pool, `SELECT count(*) AS n FROM ${schema}.job WHERE name = $1 AND state < 'completed'`, [QUEUE], () => count >= n);
  await boss.offWork(QUEUE, { id, wait: true });
  return last;
};

exports.consume = async (_workers, onJob) => {
  const id = await work(onJob);
  return () => boss.offWork(QUEUE, { id, wait: true });
};

exports.close = async () => {
  if (boss) await boss.stop({ graceful: true });
  if (pool) await pool.end();
};
