'use strict';
// The EchoMQ 2.0 bus for Node: every job transition is one EVALSHA of a bundle script with its
// keys built by the closed grammar; reads are read-only commands on grammar keys (A4).

const { Bundle } = require('./bundle');
const { Session } = require('./session');
const { Minter, MinterLostError } = require('./minter');
const keys = require('./keys');
const errors = require('./errors');

const text = (v) => (Buffer.isBuffer(v) ? v.toString('utf8') : v);
const bytes = (v) => (Buffer.isBuffer(v) ? v : Buffer.from(v ?? '', 'utf8'));

function int(what, v, { min = 0, dflt } = {}) {
  if (v === undefined || v === null) {
    if (dflt !== undefined) return dflt;
    throw errors.arg(`${what} is required`);
  }
  if (!Number.isSafeInteger(v) || v < min) throw errors.arg(`${what} ${JSON.stringify(v)}: want an integer >= ${min}`);
  return v;
}

function num(v) {
  return typeof v === 'bigint' ? Number(v) : v;
}

// claimed shapes a claim reply: {} → null; else {id, payload, token, checkpoint[, lane]}.
function claimed(r) {
  if (!Array.isArray(r) || r.length === 0) return null;
  const job = { id: text(r[0]), payload: r[1] ?? Buffer.alloc(0), token: num(r[2]), checkpoint: r[3] ?? null };
  if (r.length > 4) job.lane = text(r[4]);
  return job;
}

class Bus {
  #queues = new Map();

  constructor({ session, minter, log }) {
    this.session = session;
    this.minter = minter;
    this.log = log;
  }

  // connect opens a fenced session (HELLO 2, server check, fence) and leases a minter id.
  static async connect(address, { bundle = Bundle.load(), admitEngine = false, minterTtlMs = 30000, log = () => {} } = {}) {
    const session = new Session({ address, bundle, admitEngine, log });
    await session.connect();
    const minter = new Minter({ exec: (...a) => session.command(...a), ttlMs: minterTtlMs ?? 30000, log });
    try {
      await minter.acquire();
    } catch (err) {
      session.closeAll();
      throw err;
    }
    return new Bus({ session, minter, log });
  }

  get bundle() {
    return this.session.bundle;
  }

  queue(name) {
    let q = this.#queues.get(name);
    if (!q) {
      q = new keys.Queue(name);
      this.#queues.set(name, q);
    }
    return q;
  }

  #run(name, keyList, argv) {
    return this.session.evalsha(name, keyList, argv);
  }

  // mint mints one id; when an outage outlived the minter's lease it leases again first (the
  // same minter object, so ids stay above every id minted before).
  async mint() {
    try {
      return await this.minter.next();
    } catch (err) {
      if (!(err instanceof MinterLostError)) throw err;
      await this.minter.reaffirm();
      return this.minter.next();
    }
  }

  // enqueue writes a job (minting its id unless given); created false means the id existed and
  // nothing changed.
  async enqueue(queue, payload, { id, delayMs = 0, lane } = {}) {
    const q = this.queue(queue);
    const delay = int('delay_ms', delayMs, { dflt: 0 });
    // Canon §2.4's order: the queue (above), then the lane name, then the id.
    const laneKey = lane !== undefined && lane !== null ? q.lane(lane) : null;
    if (id !== undefined && id !== null) q.job(id);
    const jid = id ?? (await this.mint());
    let r;
    if (laneKey) {
      r = await this.#run('lane_enqueue',
        [q.job(jid), laneKey, q.scheduled, q.wake, q.laneof, q.lanes, q.ring],
        [jid, lane, bytes(payload), delay]);
    } else {
      r = await this.#run('enqueue', [q.job(jid), q.pending, q.scheduled, q.wake], [jid, bytes(payload), delay]);
    }
    return { id: jid, created: r === 1 };
  }

  async claim(queue, leaseMs) {
    const q = this.queue(queue);
    const lease = int('lease_ms', leaseMs, { min: 1 });
    return claimed(await this.#run('claim', [q.pending, q.active, q.meta, q.wake, q.ckpt, q.ring], [lease]));
  }

  async laneClaim(queue, leaseMs) {
    const q = this.queue(queue);
    const lease = int('lease_ms', leaseMs, { min: 1 });
    return claimed(await this.#run('lane_claim', [q.ring, q.active, q.meta, q.wake, q.ckpt, q.lanes, q.pending], [lease]));
  }

  async extend(queue, id, token, leaseMs) {
    const q = this.queue(queue);
    const row = q.job(id);
    return num(await this.#run('extend', [row, q.active],
      [id, int('token', token, { min: 1 }), int('lease_ms', leaseMs, { min: 1 })]));
  }

  async complete(queue, id, token) {
    const q = this.queue(queue);
    const row = q.job(id);
    await this.#run('complete', [row, q.active, q.ckpt, q.errors, q.laneof, q.lanes, q.ring, q.wake],
      [id, int('token', token, { min: 1 })]);
  }

  async retry(queue, id, token, { maxAttempts, delayMs = 0, error = '' } = {}) {
    const q = this.queue(queue);
    const row = q.job(id);
    const r = await this.#run('retry',
      [row, q.active, q.pending, q.scheduled, q.dead, q.errors, q.wake, q.laneof, q.lanes, q.ring],
      [id, int('token', token, { min: 1 }), int('max_attempts', maxAttempts, { min: 1 }),
        int('delay_ms', delayMs, { dflt: 0 }), String(error)]);
    return text(r);
  }

  async fail(queue, id, token, error = '') {
    const q = this.queue(queue);
    const row = q.job(id);
    await this.#run('fail', [row, q.active, q.dead, q.errors, q.laneof, q.lanes, q.ring, q.wake],
      [id, int('token', token, { min: 1 }), String(error)]);
  }

  async checkpoint(queue, id, token, data) {
    const q = this.queue(queue);
    const row = q.job(id);
    await this.#run('checkpoint', [row, q.active, q.ckpt], [id, int('token', token, { min: 1 }), bytes(data)]);
  }

  async reap(queue, maxAttempts, limit = 1000) {
    const q = this.queue(queue);
    return num(await this.#run('reap',
      [q.active, q.pending, q.dead, q.errors, q.wake, q.laneof, q.lanes, q.ring],
      [int('max_attempts', maxAttempts, { min: 1 }), int('limit', limit, { min: 1, dflt: 1000 })]));
  }

  async promote(queue, limit = 1000) {
    const q = this.queue(queue);
    return num(await this.#run('promote', [q.scheduled, q.pending, q.wake, q.laneof, q.lanes, q.ring],
      [int('limit', limit, { min: 1, dflt: 1000 })]));
  }

  // morgue browses dead jobs, oldest death first, with read-only commands pipelined.
  async morgue(queue, limit = 100) {
    const q = this.queue(queue);
    const n = int('limit', limit, { min: 1, dflt: 100 });
    if (n > 10000) throw errors.arg(`limit ${n}: want 1..10000`); // A16, as reap and promote
    const conn = this.session.live();
    const flat = await conn.send('ZRANGE', q.dead, 0, n - 1, 'WITHSCORES');
    const entries = [];
    for (let i = 0; i < flat.length; i += 2) entries.push({ id: text(flat[i]), died: Number(text(flat[i + 1])) });
    const reads = [];
    for (const e of entries) {
      reads.push(['HMGET', q.job(e.id), 'attempts', 'payload'], ['HGET', q.errors, e.id]);
    }
    const got = reads.length ? await conn.pipeline(reads) : [];
    return entries.map((e, i) => {
      const row = got[2 * i];
      const err = got[2 * i + 1];
      if (row instanceof Error) throw row;
      if (err instanceof Error) throw err;
      return {
        id: e.id,
        attempts: Number(text(row[0]) ?? 0),
        payload: row[1] ?? Buffer.alloc(0),
        error: text(err) ?? '',
        diedMs: e.died,
      };
    });
  }

  async revive(queue, id) {
    const q = this.queue(queue);
    const row = q.job(id);
    return (await this.#run('revive', [row, q.dead, q.pending, q.errors, q.wake, q.laneof, q.lanes, q.ring], [id])) === 1;
  }

  async purge(queue, id) {
    const q = this.queue(queue);
    const row = q.job(id);
    return (await this.#run('purge', [row, q.dead, q.errors, q.ckpt, q.laneof], [id])) === 1;
  }

  async pause(queue) {
    const q = this.queue(queue);
    await this.#run('pause', [q.meta], []);
  }

  async resume(queue) {
    const q = this.queue(queue);
    await this.#run('resume', [q.meta, q.pending, q.ring, q.wake], []);
  }

  async lanePause(queue, lane) {
    const q = this.queue(queue);
    q.lane(lane);
    await this.#run('lane_pause', [q.lanes, q.ring], [lane]);
  }

  async laneResume(queue, lane) {
    const q = this.queue(queue);
    await this.#run('lane_resume', [q.lane(lane), q.lanes, q.ring, q.wake], [lane]);
  }

  async laneCeiling(queue, lane, ceiling) {
    const q = this.queue(queue);
    await this.#run('lane_ceiling', [q.lane(lane), q.lanes, q.ring, q.wake], [lane, int('ceiling', ceiling, { dflt: 0 })]);
  }

  // reconnect drops every connection and fences a new one before the minter's lease is renewed.
  async reconnect() {
    await this.session.reconnect();
    await this.minter.reaffirm();
  }

  // close releases the minter lease and closes every connection.
  async close() {
    try {
      if (this.session.conn && !this.session.conn.closed) await this.minter.release();
      else this.minter.stop();
    } finally {
      this.session.closeAll();
    }
  }
}

module.exports = { Bus };
