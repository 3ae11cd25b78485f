// BullMQ (ioredis) on the bench's Valkey, for driver.js.
'use strict';

const { performance } = require('node:perf_hooks');
const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');
const { version } = require('./common.js');

const QUEUE = 'bench-bullmq';
let valkey = null; // { host, port }
let queue = null;
const conns = [];

function connection() {
  // Workers need maxRetriesPerRequest: null (BullMQ's requirement for blocking commands).
  const c = new IORedis({ host: valkey.host, port: valkey.port, maxRetriesPerRequest: null });
  conns.push(c);
  return c;
}


// Jobs leave nothing once done, as on the bus.
const jobOpts = { removeOnComplete: true, removeOnFail: true };

exports.open = async (req) => {
  const [host, port] = req.valkey.split(':');
  valkey = { host, port: Number(port) };
  queue = new Queue(QUEUE, { connection: connection() });
  await queue.waitUntilReady();
  return {
    version: `bullmq ${version('bullmq')}, ioredis ${version('ioredis')}`,
    settings: [['Worker concurrency', String(req.workers)], ['removeOnComplete', 'true'], ['removeOnFail', 'true'],
      ['worker connection', 'one per Worker'], ['queue connection', 'one shared by every producer']],
  };
};

exports.reset = () => queue.obliterate({ force: true });

exports.count = () => queue.count();

exports.add = (data) => queue.add('j', data, jobOpts);

exports.addBulk = (bodies) => queue.addBulk(bodies.map((data) => ({ name: 'j', data, opts: jobOpts })));

// drain: one Worker of the given concurrency, done at the n-th 'completed' event (BullMQ has
// then moved the job out of active).
exports.drain = async (workers, n, started) => {
  let completed = 0;
  let last = 0;
  let finish;
  const done = new Promise((resolve) => { finish = resolve; });
  const w = new Worker(QUEUE, async () => { started(); }, { connection: connection(), concurrency: workers });
  w.on('completed', () => {
    if (++completed === n) {
      last = performance.now();
      finish();
    }
  });
  await done;
  await w.close();
  return last;
};

exports.consume = async (workers, onJob) => {
  const w = new Worker(QUEUE, async (job) => { onJob(job.data); }, { connection: connection(), concurrency: workers });
  await w.waitUntilReady();
  return () => w.close();
};

exports.close = async () => {
  if (queue) await queue.close();
  await Promise.all(conns.map((c) => c.quit().catch(() => {})));
};
