'use strict';
// The parking consumer (canon law 6, A10). Each consumer owns one connection used for nothing but
// the handshake and BLPOP on the queue's wake key; claims and settlements go over the bus's shared
// command connection. It claims until the queue answers empty (at start, and each time it is
// woken), then parks again — an idle consumer sends nothing else, and a burst passes the
// re-armed token from consumer to consumer.

const errors = require('./errors');

class Consumer {
  #bus;
  #conn = null;
  #stopped = false;
  #done;

  // handler(job) settles nothing itself: resolving completes the job; throwing retries it
  // (backoffMs(attempt) later) or, at maxAttempts, sends it to the morgue.
  // reserve()/unreserve() let a caller cap how many jobs a group of consumers takes; reserve may
  // answer a promise (a woken consumer then waits for a reservation rather than parking again).
  constructor(bus, queue, {
    name = 'emq-consumer', leaseMs = 30000, parkMs = 5000, handler = async () => {},
    maxAttempts = 5, backoffMs = (attempt) => Math.min(60000, 100 * 2 ** attempt),
    reserve = () => true, unreserve = () => {}, onSettled = () => {}, log = () => {},
  } = {}) {
    this.#bus = bus;
    this.queue = bus.queue(queue).name;
    this.wakeKey = bus.queue(queue).wake;
    this.name = name;
    this.leaseMs = leaseMs;
    if (!Number.isSafeInteger(parkMs) || parkMs < 1) throw errors.arg(`park_ms ${parkMs}: want an integer >= 1`);
    this.parkMs = parkMs;
    this.handler = handler;
    this.maxAttempts = maxAttempts;
    this.backoffMs = backoffMs;
    this.reserve = reserve;
    this.unreserve = unreserve;
    this.onSettled = onSettled;
    this.log = log;
  }

  // run parks and drains until stop() or the deadline (epoch ms, optional).
  async run({ deadline = Infinity } = {}) {
    this.#done = (async () => {
      this.#conn = await this.#bus.session.open(this.name);
      try {
        // One first look: a backlog whose wake token was taken by a consumer that died before
        // claiming would otherwise wait for the next arm.
        let woke = true;
        while (!this.#stopped) {
          if (woke) await this.#drain(deadline);
          const left = deadline - Date.now();
          if (this.#stopped || left <= 0) break;
          const wait = Math.max(1, Math.min(this.parkMs, left));
          try {
            woke = (await this.#conn.sendBlocking(wait, 'BLPOP', this.wakeKey, (wait / 1000).toFixed(3))) !== null;
          } catch (err) {
            if (this.#stopped) break;
            throw err;
          }
        }
      } finally {
        this.#bus.session.release(this.#conn);
      }
    })();
    return this.#done;
  }

  async #drain(deadline) {
    while (!this.#stopped && Date.now() < deadline) {
      if (!(await this.reserve())) return;
      if (this.#stopped) {
        this.unreserve();
        return;
      }
      const job = await this.#bus.claim(this.queue, this.leaseMs);
      if (!job) {
        this.unreserve();
        return;
      }
      await this.#settle(job);
    }
  }

  async #settle(job) {
    let outcome = 'completed';
    try {
      await this.handler(job);
    } catch (err) {
      outcome = await this.#bus.retry(this.queue, job.id, job.token, {
        maxAttempts: this.maxAttempts, delayMs: this.backoffMs(job.token), error: String(err?.message ?? err),
      });
      this.onSettled(job, outcome, this.name);
      return;
    }
    await this.#bus.complete(this.queue, job.id, job.token);
    this.onSettled(job, outcome, this.name);
  }

  // stop ends the consumer: a pending BLPOP is cut by closing its connection.
  stop() {
    this.#stopped = true;
    if (this.#conn) this.#conn.close();
    return this.#done;
  }
}

module.exports = { Consumer };
