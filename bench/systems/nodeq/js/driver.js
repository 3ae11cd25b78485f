// A Node.js system under the kit's bench: `node driver.js <module>` loads ./<module>.js (the
// system) and answers one JSON request per line on stdin with one reply per line on stdout. The
// bench (Go) decides what runs; each scenario runs here, inside Node, so the system is measured
// through its own client with no inter-process hop per job. Throughput is timed with
// performance.now(); latency with mono (below), which the latency scenario's producer process
// shares. `node driver.js <module> --producer` is that producer: it answers hello and offer only.
'use strict';

const readline = require('node:readline');
const { spawn } = require('node:child_process');
const { performance } = require('node:perf_hooks');
const { Worker: Thread } = require('node:worker_threads');

const sys = require(`./${process.argv[2]}.js`);
// A producer runs only the latency scenario's generator, in a process of its own (see latency).
const producerRole = process.argv[3] === '--producer';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// mono is the clock every latency is taken on: CLOCK_MONOTONIC in ms (process.hrtime), the same
// in every process and thread of the machine, so a job stamped by the producer process is timed
// by the consumer's.
const mono = () => Number(process.hrtime.bigint()) / 1e6;

// A job's body: its intended send instant on mono's clock, as the Go side's {"t": unix nanos}.
const body = (at) => ({ t: at });

// enqueue runs producers concurrent loops of one scenario for seconds.
async function enqueue(req) {
  const until = performance.now() + req.seconds * 1000;
  let jobs = 0;
  let row = 0;
  const one = {
    'enqueue-single': async () => { await sys.add(body(0)); return 1; },
    'enqueue-concurrent': async () => { await sys.add(body(0)); return 1; },
    'enqueue-batch': async () => {
      const bodies = [];
      for (let i = 0; i < req.batch; i++) bodies.push(body(0));
      await sys.addBulk(bodies);
      return req.batch;
    },
    'enqueue-transactional': async () => { await sys.addWithRow(++row, body(0)); return 1; },
  }[req.scenario];
  if (!one) throw new Error(`unknown enqueue scenario ${req.scenario}`);
  const producer = async () => {
    while (performance.now() < until) {
      const k = await one(); // not `jobs += await one()`: that reads jobs before the await
      jobs += k;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: req.producers }, producer));
  const seconds = (performance.now() - start) / 1000;
  // The figure is checked against the system's own record: the queue was empty before the run.
  const held = await sys.count();
  if (held !== jobs) throw new Error(`counted ${jobs} jobs enqueued, the system holds ${held}`);
  return { jobs, seconds };
}

async function fill(req) {
  for (let done = 0; done < req.n;) {
    const k = Math.min(1000, req.n - done);
    const bodies = [];
    for (let i = 0; i < k; i++) bodies.push(body(0));
    await sys.addBulk(bodies);
    done += k;
  }
  return {};
}

// drain works off the filled backlog with workers slots and an empty handler, timed from the
// first handler start to the moment the system has recorded the n-th completion (the system's
// drain resolves with that instant).
async function drain(req) {
  const called = performance.now();
  let first = 0;
  let started = 0;
  const last = await sys.drain(req.workers, req.n, () => {
    if (first === 0) first = performance.now();
    started++;
  });
  if (started < req.n) throw new Error(`${started} handler starts for ${req.n} jobs`);
  return { startup_ms: first - called, window_ms: last - first };
}

// ticks calls onTick(i, at) at each of n instants interval ms apart (until it answers false), the first lead ms after the
// thread that keeps them is running (on mono's clock), and resolves with that first instant. The
// waits run on a worker thread in Atomics.wait, which sleeps to a fraction of a millisecond:
// Node's own timers take whole milliseconds (a fraction is truncated) and read a cached loop
// clock, so a timer-driven generator hands jobs over up to a millisecond early or late. A tick
// reaches this thread as a message; the lateness that leaves is the sender's, counted in the
// latency as for every system. The start is fixed only once the thread runs: a thread takes tens
// of milliseconds to start, and a start fixed before it made the round's first jobs late, a
// lateness of the generator, not of the system (it marked every BullMQ round saturated).
function ticks(n, interval, lead, onTick) {
  const src = `
    const { parentPort, workerData } = require('node:worker_threads');
    const { n, interval } = workerData;
    const mono = () => Number(process.hrtime.bigint()) / 1e6;
    const cell = new Int32Array(new SharedArrayBuffer(4));
    parentPort.once('message', (start) => {
      for (let i = 0; i < n; i++) {
        const at = start + i * interval;
        for (let w = at - mono(); w > 0; w = at - mono()) {
          Atomics.wait(cell, 0, 0, w);
        }
        parentPort.postMessage(i);
      }
      parentPort.postMessage(-1);
    });`;
  return new Promise((resolve, reject) => {
    const th = new Thread(src, { eval: true, workerData: { n, interval } });
    let start = 0;
    th.once('online', () => {
      start = mono() + lead;
      th.postMessage(start);
    });
    let done = false;
    th.on('message', (i) => {
      if (done) return;
      if (i >= 0 && onTick(i, start + i * interval) !== false) return;
      done = true;
      th.terminate().then(() => resolve(start), reject);
    });
    th.on('error', reject);
  });
}

// offer hands n jobs to the system's add, one at each instant interval ms apart from a start lead
// ms ahead (open loop: a job's body carries its instant), and answers what it sent and how late each hand-off
// was. An add the client gave up on (a pool's connection timeout while adds pile up at a rate the
// system cannot take) is counted as failed, with the first reason: the round is saturated.
async function offer(req) {
  const late = [];
  let sent = 0;
  let failed = 0;
  let why = '';
  const adds = [];
  let gaveUpAt = 0;
  let gaveUpBehind = 0;
  const start = await ticks(req.n, req.interval, req.lead, (i, at) => {
    const behind = adds.length - sent - failed; // adds not answered yet
    if (req.give_up && behind >= req.give_up) {
      gaveUpAt = i;
      gaveUpBehind = behind;
      return false;
    }
    late.push((mono() - at) * 1000);
    adds.push(sys.add(body(at)).then(() => { sent++; }, (e) => { failed++; why = why || String((e && e.message) || e); }));
    return true;
  });
  await Promise.all(adds);
  return { sent, failed, failed_why: why, send_seconds: (mono() - start) / 1000, late_us: late,
    gave_up_at: gaveUpAt, gave_up_behind: gaveUpBehind };
}

// The producer process, started at the first latency round and kept for the run: the same
// driver with its own instance of the system, opened with the consumer's hello.
let producer = null;

function startProducer(helloReq) {
  const child = spawn(process.execPath, [__filename, process.argv[2], '--producer'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = [];
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    const w = waiting.shift();
    if (!w) return;
    const r = JSON.parse(line);
    if (r.ok) w.resolve(r.result); else w.reject(new Error(`producer: ${r.error}`));
  });
  child.on('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`producer exited (${code})`));
  });
  const call = (req) => new Promise((resolve, reject) => {
    waiting.push({ resolve, reject });
    child.stdin.write(JSON.stringify(req) + '\n');
  });
  return { child, call, ready: call(helloReq) };
}

// latency offers rate jobs/s for seconds (open loop: each job carries its intended send instant
// and latency is counted from it) to workers slots; it answers every latency and every sender
// lateness in microseconds. The generator runs in a producer process of its own unless
// req.producer is 'same-process': in one process it shares the system's event loop, and a busy
// loop (the worker's own fetches and completions) holds the hand-offs back — lateness the
// system would not have with its producers elsewhere, as its documentation deploys them.
async function latency(req) {
  const lat = [];
  const stop = await sys.consume(req.workers, (job) => {
    lat.push((mono() - job.t) * 1000);
  });
  await sleep(1000); // start-up is not what this measures
  const n = Math.floor(req.rate * req.seconds);
  const own = req.producer !== 'same-process';
  const plan = { op: 'offer', n, interval: 1000 / req.rate, lead: 5, give_up: req.give_up || 0 };
  let r;
  try {
    if (own) {
      producer = producer || startProducer(helloReq);
      await producer.ready;
      r = await producer.call(plan);
    } else {
      r = await offer(plan);
    }
  } finally {
    const deadline = mono() + 10000 + req.seconds * 1000;
    while (r && lat.length < r.sent && mono() < deadline) await sleep(10);
    await stop();
  }
  return { offered: n, sent: r.sent, failed: r.failed, failed_why: r.failed_why, received: lat.length, send_seconds: r.send_seconds,
    latency_us: lat, late_us: r.late_us, gave_up_at: r.gave_up_at, gave_up_behind: r.gave_up_behind };
}

let helloReq = null;

async function hello(req) {
  helloReq = req;
  const h = await sys.open({ ...req, producer: producerRole });
  return { version: h.version, node: process.version, settings: h.settings };
}

const ops = producerRole ? { hello, offer } : { hello, reset: () => sys.reset().then(() => ({})), enqueue, fill, drain, latency };

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
  if (producer) {
    producer.child.stdin.end(); // its loop ends, it closes its system and exits
    await new Promise((r) => { if (producer.child.exitCode !== null) r(); else producer.child.on('exit', r); });
  }
  await sys.close().catch(() => {});
  process.stdout.write('', () => process.exit(0)); // exit once every reply is out of the pipe
}

main().catch((e) => {
  process.stderr.write(String((e && e.stack) || e) + '\n');
  process.exit(1);
});
