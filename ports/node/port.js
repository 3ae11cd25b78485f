#!/usr/bin/env node
'use strict';
// The EchoMQ port protocol on stdio (contracts/PROTOCOL.md Part B): one JSON request per line in,
// one reply per line out, strictly in order. Logs go to stderr only.

const readline = require('node:readline');
const { Bus } = require('./lib/bus');
const { Bundle } = require('./lib/bundle');
const { Consumer } = require('./lib/consumer');
const keys = require('./lib/keys');
const { slot } = require('./lib/slot');
const errors = require('./lib/errors');
const fields = require('./lib/fields');

const NAME = 'echomq-node';
const CLAIMS = Array.from({ length: 14 }, (_, i) => `C${String(i + 1).padStart(2, '0')}`);

const log = (msg) => process.stderr.write(`[${NAME} ${new Date().toISOString()}] ${msg}\n`);

// b64in decodes a base64 field the field check (lib/fields.js) already held to its domain.
const b64in = (s) => Buffer.from(s, 'base64');
const b64out = (b) => (b === null || b === undefined ? null : Buffer.from(b).toString('base64'));

function claimReply(job) {
  if (!job) return null;
  const r = { id: job.id, payload_b64: b64out(job.payload), token: job.token, checkpoint_b64: b64out(job.checkpoint) };
  if (job.lane !== undefined) r.lane = job.lane;
  return r;
}

class Port {
  bus = null;
  bundle = null;
  // inputEnded() says the kit closed stdin with no request left after the current one; a park
  // (which waits by design) then ends at once: nobody is left to read its reply.
  inputEnded = () => false;
  #interrupts = new Set();

  interrupt() {
    for (const stop of this.#interrupts) stop();
  }

  need() {
    if (!this.bus) throw new Error('no session: hello has not succeeded');
    return this.bus;
  }

  async hello(r) {
    if (this.bus) throw errors.arg('hello: the session is already open');
    // Cluster mode is a capability this port does not declare: cluster: true is refused (Part B
    // hello, B-37), never served as a standalone session, and opens none (B-288).
    if (r.cluster === true) throw new errors.EmqError('UNSUPPORTED', 'hello: cluster mode (capability cluster) is not offered');
    this.bundle = this.bundle ?? Bundle.load();
    const admitEngine = process.env.EMQ_NODE_ADMIT_ENGINE === '1';
    if (admitEngine) log('EMQ_NODE_ADMIT_ENGINE=1: a non-canon engine will be admitted (experiments only)');
    const ttl = r.minter_ttl_ms;
    this.bus = await Bus.connect(r.valkey, { bundle: this.bundle, admitEngine, minterTtlMs: ttl, log });
    log(`fenced ${r.valkey} (bundle ${this.bundle.version} ${this.bundle.digest}), minter worker ${this.bus.minter.worker}`);
    return {
      name: NAME, runtime: `node ${process.version}`, bundle: this.bundle.version,
      digest: this.bundle.digest, claims: CLAIMS, capabilities: ['clock', 'minter_ttl'],
    };
  }

  // clock scripts the minter's snowflake clock (a test aid; capability "clock").
  clock(r) {
    this.need().minter.setClock(r.set_ms, r.scale);
    return {};
  }

  async mint(r) {
    const bus = this.need();
    const { n, parallel } = r;
    const caller = async () => {
      const out = [];
      for (let i = 0; i < n; i++) out.push(await bus.mint());
      return out;
    };
    return { ids: await Promise.all(Array.from({ length: parallel }, caller)) };
  }

  key(r) {
    return { key: new keys.Queue(r.queue).build(r.type, { id: r.id, lane: r.lane }) };
  }

  slot(r) {
    return { slot: slot(r.key) };
  }

  async enqueue(r) {
    return this.need().enqueue(r.queue, b64in(r.payload_b64), { id: r.id, delayMs: r.delay_ms, lane: r.lane });
  }

  async claim(r) {
    return claimReply(await this.need().claim(r.queue, r.lease_ms));
  }

  async lane_claim(r) {
    return claimReply(await this.need().laneClaim(r.queue, r.lease_ms));
  }

  async extend(r) {
    return { deadline_ms: await this.need().extend(r.queue, r.id, r.token, r.lease_ms) };
  }

  async complete(r) {
    await this.need().complete(r.queue, r.id, r.token);
    return {};
  }

  async retry(r) {
    const outcome = await this.need().retry(r.queue, r.id, r.token,
      { maxAttempts: r.max_attempts, delayMs: r.delay_ms, error: r.error });
    return { outcome };
  }

  async fail(r) {
    await this.need().fail(r.queue, r.id, r.token, r.error);
    return {};
  }

  async checkpoint(r) {
    await this.need().checkpoint(r.queue, r.id, r.token, b64in(r.data_b64));
    return {};
  }

  async reap(r) {
    return { count: await this.need().reap(r.queue, r.max_attempts, r.limit) };
  }

  async promote(r) {
    return { count: await this.need().promote(r.queue, r.limit) };
  }

  async morgue(r) {
    const jobs = await this.need().morgue(r.queue, r.limit);
    return {
      jobs: jobs.map((j) => ({
        id: j.id, attempts: j.attempts, payload_b64: b64out(j.payload), error: j.error, died_ms: j.diedMs,
      })),
    };
  }

  async revive(r) {
    return { changed: await this.need().revive(r.queue, r.id) };
  }

  async purge(r) {
    return { changed: await this.need().purge(r.queue, r.id) };
  }

  async pause(r) {
    await this.need().pause(r.queue);
    return {};
  }

  async resume(r) {
    await this.need().resume(r.queue);
    return {};
  }

  async lane_pause(r) {
    await this.need().lanePause(r.queue, r.lane);
    return {};
  }

  async lane_resume(r) {
    await this.need().laneResume(r.queue, r.lane);
    return {};
  }

  async lane_ceiling(r) {
    await this.need().laneCeiling(r.queue, r.lane, r.ceiling);
    return {};
  }

  // park runs `consumers` parking consumers until `jobs` jobs were claimed and completed in all,
  // or timeout_ms passed; the reply lists completions in order.
  async park(r) {
    const bus = this.need();
    const { consumers, jobs: want, timeout_ms: timeout } = r;
    const done = [];
    const deadline = Date.now() + timeout;
    const group = [];
    let finish;
    let over = false;
    const finished = new Promise((res) => { finish = res; }).then(() => { over = true; });
    // A claim is reserved while it is out, so the park takes no more than `jobs`. A consumer
    // woken while every reservation is out waits for one to come back instead of parking
    // again: it took the wake token, and the claims out may all come back empty (sent before
    // the job it was woken for), which would leave that job with no token and no consumer.
    let reserved = 0;
    const waiting = [];
    const release = () => { for (const w of waiting.splice(0)) w(); };
    const reserve = async () => {
      while (reserved >= want) {
        if (over || done.length >= want || Date.now() >= deadline) return false;
        await new Promise((res) => {
          waiting.push(res);
          setTimeout(res, Math.max(1, deadline + 1 - Date.now())).unref();
        });
      }
      reserved++;
      return true;
    };
    for (let i = 0; i < consumers; i++) {
      group.push(new Consumer(bus, r.queue, {
        name: `emq-park-${i}`, leaseMs: r.lease_ms, parkMs: r.park_ms, log,
        reserve,
        unreserve: () => { reserved--; release(); },
        onSettled: (job) => {
          done.push({ consumer: i, id: job.id, token: job.token });
          if (done.length >= want) finish();
        },
      }));
    }
    if (want === 0 || this.inputEnded()) finish();
    this.#interrupts.add(finish);
    const runs = group.map((c) => c.run({ deadline }).catch((err) => { finish(); throw err; }));
    const all = Promise.allSettled(runs).then(finish);
    await Promise.race([finished, all]);
    this.#interrupts.delete(finish);
    for (const c of group) c.stop();
    release();
    const results = await Promise.allSettled(runs);
    const failed = results.find((x) => x.status === 'rejected');
    if (failed && done.length < want) throw failed.reason;
    return { jobs: done };
  }

  async reconnect() {
    await this.need().reconnect();
    log('reconnected and fenced again');
    return {};
  }

  async close() {
    if (this.bus) await this.bus.close();
    this.bus = null;
    return {};
  }
}

const OPS = new Set(['hello', 'mint', 'key', 'slot', 'enqueue', 'claim', 'lane_claim', 'extend', 'complete',
  'retry', 'fail', 'checkpoint', 'reap', 'promote', 'morgue', 'revive', 'purge', 'pause', 'resume',
  'lane_pause', 'lane_resume', 'lane_ceiling', 'park', 'reconnect', 'close', 'clock']);

function wireError(err) {
  if (err instanceof errors.EmqError) return { type: err.type, message: err.detail };
  return { type: 'INTERNAL', message: String(err?.message ?? err) };
}

async function main() {
  const port = new Port();
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  const write = (obj) => new Promise((res) => process.stdout.write(`${JSON.stringify(obj)}\n`, res));
  let closing = false;
  // stdin is read ahead of the loop: the input has ended for the current request only when no
  // line came after it.
  let received = 0;
  let taken = 0;
  let ended = false;
  port.inputEnded = () => ended && received === taken;
  rl.on('line', () => { received += 1; });
  rl.on('close', () => {
    ended = true;
    if (port.inputEnded()) port.interrupt();
  });
  for await (const line of rl) {
    taken += 1;
    if (line.trim() === '') continue;
    // A line that is not a JSON object with an unsigned integer seq is no request: EMQARG under
    // seq 0, and the session goes on (PROTOCOL.md B-285).
    let req;
    try {
      req = JSON.parse(line);
      if (req === null || typeof req !== 'object' || Array.isArray(req)) throw new Error('not a JSON object');
      if (!Number.isSafeInteger(req.seq) || req.seq < 0) throw new Error('no unsigned integer seq');
    } catch (err) {
      log(`unparseable request line: ${err.message}`);
      await write({ seq: 0, ok: false, error: { type: 'EMQARG', message: `unparseable request: ${err.message}` } });
      continue;
    }
    const { seq, op } = req;
    let reply;
    if (!OPS.has(op)) {
      reply = { seq, ok: false, error: { type: 'UNSUPPORTED', message: `op ${JSON.stringify(op)}` } };
    } else {
      try {
        reply = { seq, ok: true, result: await port[op](fields.check(op, req)) };
      } catch (err) {
        if (!(err instanceof errors.EmqError)) log(`${op}: ${err.stack ?? err}`);
        reply = { seq, ok: false, error: wireError(err) };
      }
    }
    await write(reply);
    if (op === 'close' && reply.ok) {
      closing = true;
      break;
    }
  }
  if (!closing && port.bus) await port.bus.close().catch((err) => log(`close at EOF: ${err.message}`));
  process.exit(0);
}

if (require.main === module) {
  main().catch((err) => {
    log(`fatal: ${err.stack ?? err}`);
    process.exit(1);
  });
}

module.exports = { Port, CLAIMS };
