// BullMQ under the kit's bench: one JSON request per line on stdin, one reply per line on stdout.
// The bench (Go) decides what runs; this program runs each scenario inside Node, so BullMQ is
// measured through its own client (ioredis) with no inter-process hop per job. Times are taken
// with performance.now() (monotonic, sub-millisecond) on both ends of every interval.
'use strict';

const readline = require('node:readline');
const { performance } = require('node:perf_hooks');
const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');

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

function version(pkg) {
  return require(`${pkg}/package.json`).version;
}

// Settings printed beside every figure, as the bench prints River's.
const jobOpts = { removeOnComplete: true, removeOnFail: true };

async function hello(req) {
  const [host, port] = req.valkey.split(':');
  valkey = { host, port: Number(port) };
  queue = new Queue(QUEUE, { connection: connection() });
  await queue.waitUntilReady();
  return {
    bullmq: version('bullmq'), ioredis: version('ioredis'), node: process.version,
    settings: [['removeOnComplete', 'true'], ['removeOnFail', 'true'], ['worker connection', 'one per Worker'],
      ['queue connection', 'one shared by every producer']],
  };
}

async function reset() {
  await queue.obliterate({ force: true });
  return {};
}

const body = (t) => ({ t });

// enqueue runs producers concurrent loops of add (or addBulk of batch) for seconds.
async function enqueue(req) {
  const until = performance.now() + req.seconds * 1000;
  let jobs = 0;
  const producer = async () => {
    while (performance.now() < until) {
      if (req.batch > 0) {
        const bulk = [];
        for (let i = 0; i < req.batch; i++) bulk.push({ name: 'j', data: body(0), opts: jobOpts });
        await queue.addBulk(bulk);
        jobs += req.batch;
      } else {
        await queue.add('j', body(0), jobOpts);
        jobs++;
      }
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: req.producers }, producer));
  return { jobs, seconds: (performance.now() - start) / 1000 };
}

async function fill(req) {
  for (let done = 0; done < req.n;) {
    const k = Math.min(1000, req.n - done);
    const bulk = [];
    for (let i = 0; i < k; i++) bulk.push({ name: 'j', data: body(0), opts: jobOpts });
    await queue.addBulk(bulk);
    done += k;
  }
  return {};
}

// drain works off the filled backlog with one Worker of the given concurrency and an empty
// handler, timed from the first handler start to the n-th 'completed' event (BullMQ has then
// moved the job out of active).
async function drain(req) {
  const called = performance.now();
  let first = 0;
  let last = 0;
  let completed = 0;
  let finish;
  const done = new Promise((resolve) => { finish = resolve; });
  const w = new Worker(QUEUE, async () => {
    if (first === 0) first = performance.now();
  }, { connection: connection(), concurrency: req.workers });
  w.on('completed', () => {
    if (++completed === req.n) {
      last = performance.now();
      finish();
    }
  });
  await done;
  await w.close();
  return { startup_ms: first - called, window_ms: last - first };
}

// latency offers rate jobs/s for seconds (open loop: each job carries its intended send instant
// and latency is counted from it) to a Worker of the given concurrency; it answers every
// latency and every sender lateness in microseconds.
async function latency(req) {
  const lat = [];
  const late = [];
  const w = new Worker(QUEUE, async (job) => {
    lat.push((performance.now() - job.data.t) * 1000);
  }, { connection: connection(), concurrency: req.workers });
  await w.waitUntilReady();
  await new Promise((r) => setTimeout(r, 1000)); // start-up is not what this measures
  const n = Math.floor(req.rate * req.seconds);
  const interval = 1000 / req.rate;
  const start = performance.now();
  let sent = 0;
  let failed = null;
  const adds = [];
  for (let i = 0; i < n; i++) {
    const at = start + i * interval;
    const wait = at - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    late.push((performance.now() - at) * 1000);
    adds.push(queue.add('j', body(at), jobOpts).then(() => { sent++; }, (e) => { failed = failed || e; }));
  }
  await Promise.all(adds);
  const sendSeconds = (performance.now() - start) / 1000;
  const deadline = performance.now() + 10000 + req.seconds * 1000;
  while (lat.length < sent && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  await w.close();
  if (failed) throw failed;
  return { offered: n, sent, received: lat.length, send_seconds: sendSeconds, latency_us: lat, late_us: late };
}

const ops = { hello, reset, enqueue, fill, drain, latency };

async function main() {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    let req;
    try {
      req = JSON.parse(line);
    } catch (e) {
      process.stdout.write(JSON.stringify({ ok: false, error: `not JSON: ${e.message}` }) + '\n');
      continue;
    }
    if (req.op === 'close') break;
    const op = ops[req.op];
    try {
      if (!op) throw new Error(`unknown op ${req.op}`);
      const result = await op(req);
      process.stdout.write(JSON.stringify({ ok: true, result }) + '\n');
    } catch (e) {
      process.stdout.write(JSON.stringify({ ok: false, error: String((e && e.stack) || e) }) + '\n');
    }
  }
  if (queue) await queue.close();
  await Promise.all(conns.map((c) => c.quit().catch(() => {})));
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(String((e && e.stack) || e) + '\n');
  process.exit(1);
});
