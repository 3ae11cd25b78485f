'use strict';
// The leased JOB-id minter (canon §3, A9, A11). The worker id is leased from the server under the
// braced deployment key, never guessed: a guessed id could collide with a live minter's, and a
// colliding id would be swallowed by the idempotent enqueue.

const crypto = require('node:crypto');
const ids = require('./ids');
const keys = require('./keys');
const errors = require('./errors');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// monotonicMs reads a clock no wall-clock step moves, in ms.
const monotonicMs = () => Number(process.hrtime.bigint() / 1000000n);

class MinterLostError extends Error {
  constructor(message) {
    super(message);
    this.name = 'MinterLostError';
  }
}

class Minter {
  #exec;
  #now; // the real clock, in Unix ms: the snowflake's milliseconds when no clock op scripts them
  #clock; // the snowflake's milliseconds (scriptable by the clock op)
  #mono; // lease expiry's clock: monotonic ms (canon §3.4-8), so a wall-clock step cannot stretch a lease
  #ttl;
  #timer = null;
  #validUntil = 0; // local ms until which the lease is known held
  #lost = false; // the lease on worker was lost: nothing renews it, acquire leases afresh
  #lastMs = -1;
  #seq = 0;
  #mustAdvance = false; // a new worker id may not reuse the last millisecond
  #closed = false;
  #reaffirming = null; // the reaffirm under way, shared by concurrent callers

  // exec(...args) sends one command on the session's current command connection.
  constructor({ exec, ttlMs = 30000, now = Date.now, mono = monotonicMs, owner, brand = ids.JOB, log = () => {} }) {
    if (!ids.validBrand(brand)) throw errors.key(`brand ${JSON.stringify(brand)}: want three capitals`);
    if (!Number.isInteger(ttlMs) || ttlMs < 3) throw errors.arg(`minter ttl ${ttlMs} ms too short`);
    this.#exec = exec;
    this.#now = now;
    this.#clock = now;
    this.#mono = mono;
    this.#ttl = ttlMs;
    this.brand = brand;
    this.owner = owner ?? crypto.randomBytes(16).toString('hex');
    this.worker = -1;
    this.log = log;
  }

  // acquire leases a free worker id, scanning from a random start so that minters starting
  // together do not race for the same ids. One pipelined GET of every lease key comes first,
  // and SET NX goes only to the ids seen free: with most ids leased elsewhere, one round trip
  // per id took seconds on a busy machine. NX still decides, since an id seen free may be
  // taken before our SET reaches it.
  async acquire() {
    const start = crypto.randomInt(ids.MAX_WORKER + 1);
    const order = Array.from({ length: ids.MAX_WORKER + 1 }, (_, i) => (start + i) % (ids.MAX_WORKER + 1));
    const owners = await Promise.all(order.map((w) => this.#exec('GET', keys.minter(w))));
    for (const [i, w] of order.entries()) {
      if (owners[i] !== null) continue;
      const sent = this.#mono();
      const r = await this.#exec('SET', keys.minter(w), this.owner, 'NX', 'PX', this.#ttl);
      if (r === 'OK') {
        if (this.worker >= 0 && w !== this.worker) this.#mustAdvance = true;
        this.worker = w;
        this.#validUntil = sent + this.#ttl;
        this.#lost = false;
        this.#schedule();
        return w;
      }
    }
    // The port's failure, INTERNAL (canon §3.4-9), not a canon refusal of the request.
    throw new Error('no free minter id: all 1024 worker ids are leased');
  }

  // reaffirm runs after a reconnect, or when a mint finds the lease lost: keep the lease if it
  // is still ours, else lease afresh. Concurrent callers (a mint with parallel > 1) share one
  // try, so they lease one worker id between them, not one each.
  reaffirm() {
    this.#reaffirming ??= (async () => {
      if (this.worker >= 0 && (await this.renew())) return this.worker;
      return this.acquire();
    })().finally(() => { this.#reaffirming = null; });
    return this.#reaffirming;
  }

  // renew extends the lease only while the server still holds our owner token (SET … IFEQ),
  // and only by a renewal sent while the lease was still ours by our own clock: once it may have
  // run out the lease is lost (canon §3.4-8), and an OK to a renewal sent after that cannot
  // revive it (another minter may have leased the id in the gap). A lost lease stays lost, late
  // OKs to earlier renewals included: the next mint leases afresh (acquire).
  async renew() {
    if (this.worker < 0 || this.#closed) return false;
    const sent = this.#mono();
    const inTime = sent < this.#validUntil;
    const r = await this.#exec('SET', keys.minter(this.worker), this.owner, 'IFEQ', this.owner, 'PX', this.#ttl);
    if (r === 'OK' && inTime && !this.#lost) {
      this.#validUntil = sent + this.#ttl;
      return true;
    }
    if (!this.#lost) {
      const how = r === 'OK' ? 'it ran out by our clock before this renewal was sent' : 'renewal refused';
      this.log(`minter: lease on worker ${this.worker} lost (${how}); minting stops`);
    }
    this.#lost = true;
    this.#validUntil = 0;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    return false;
  }

  #schedule() {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = setInterval(() => {
      this.renew().catch((err) => this.log(`minter: renewal failed: ${err.message}`));
    }, Math.min(2 ** 31 - 1, Math.max(1, Math.floor(this.#ttl / 3))));
    this.#timer.unref();
  }

  // setClock scripts the snowflake clock (the port protocol's clock op): from now on it reads
  // setMs (Unix ms) and advances 1 ms per `scale` real ms; setMs 0 returns to the real clock.
  setClock(setMs, scale = 1) {
    if (!setMs) {
      this.#clock = this.#now;
      return;
    }
    const at = performance.now();
    const per = Math.max(1, scale);
    this.#clock = () => setMs + Math.floor((performance.now() - at) / per);
  }

  get held() {
    return !this.#closed && this.worker >= 0 && this.#mono() < this.#validUntil;
  }

  // next mints one id. Ids from one minter strictly increase: a clock stepped back keeps the
  // last millisecond; past 4095 ids in one millisecond the minter waits for the next.
  async next() {
    for (;;) {
      if (!this.held) throw new MinterLostError(`minter holds no lease (worker ${this.worker})`);
      let ms = this.#clock() - ids.EPOCH_MS;
      if (ms < 0) throw errors.arg('clock is before the snowflake epoch 2024-01-01');
      // Past the last millisecond a snowflake holds no id can be minted: the port's failure,
      // INTERNAL (PROTOCOL.md B-284), not a refusal of the request.
      if (ms > ids.MAX_MS) throw new Error('clock is past the 42-bit snowflake range');
      if (ms < this.#lastMs) ms = this.#lastMs;
      if (ms > this.#lastMs) {
        this.#lastMs = ms;
        this.#seq = 0;
        this.#mustAdvance = false;
      } else if (!this.#mustAdvance && this.#seq < ids.MAX_SEQ) {
        this.#seq++;
      } else {
        await sleep(1);
        continue;
      }
      return ids.encode(this.brand, ids.compose(this.#lastMs, this.worker, this.#seq));
    }
  }

  // release gives the worker id back at once, and only if it is still ours: IFEQ with a 1 ms
  // expiry is a compare-and-delete (Valkey 8.1 has no DELIFEQ).
  async release() {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    if (this.worker < 0) return;
    await this.#exec('SET', keys.minter(this.worker), this.owner, 'IFEQ', this.owner, 'PX', 1);
  }

  stop() {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}

module.exports = { Minter, MinterLostError };
