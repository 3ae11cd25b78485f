'use strict';
// A fenced session: every connection it opens runs HELLO 2, the server check (A12) and the
// bundle fence before any other command, at connect and after every reconnect. Scripts run
// EVALSHA-first; NOSCRIPT loads the exact source, verifies the SHA1 the server returns, and
// retries once (a NOSCRIPT script did not run, so the retry cannot double an effect).
// A lost command connection is redialled by itself, with jittered backoff capped at 1 s; the
// new connection runs the handshake first. Meanwhile commands fail at once with ConnectionError
// (retriable). A refusal of the new connection (EMQVERSION, EMQSERVER) is final: every later
// command fails with it.

const { Connection } = require('./connection');
const errors = require('./errors');
const keys = require('./keys');

const MIN_VERSION = [8, 1, 0];
const TRANSIENT = ['LOADING', 'BUSY', 'TRYAGAIN', 'MASTERDOWN'];

function text(v) {
  return Buffer.isBuffer(v) ? v.toString('utf8') : v;
}

function parseVersion(s) {
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(s ?? '');
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

function versionAtLeast(v, min) {
  for (let i = 0; i < 3; i++) if (v[i] !== min[i]) return v[i] > min[i];
  return true;
}

// checkServer applies A12 to a RESP2 HELLO reply (a flat field/value array).
function checkServer(reply, { admitEngine = false, log = () => {} } = {}) {
  if (!Array.isArray(reply) || reply.length % 2 !== 0) throw errors.server('HELLO 2 answered a non-map reply');
  const facts = {};
  for (let i = 0; i < reply.length; i += 2) facts[text(reply[i])] = text(reply[i + 1]);
  const v = parseVersion(facts.version);
  const problems = [];
  if (facts.server !== 'valkey') problems.push(`server ${JSON.stringify(facts.server)}, want "valkey"`);
  if (!v || !versionAtLeast(v, MIN_VERSION)) problems.push(`version ${JSON.stringify(facts.version)}, want >= 8.1.0`);
  if (facts.mode !== 'standalone') problems.push(`mode ${JSON.stringify(facts.mode)}, want "standalone"`);
  if (problems.length > 0) {
    if (!admitEngine) throw errors.server(problems.join('; '));
    log(`session: ADMITTING a non-canon engine by explicit opt-in: ${problems.join('; ')}`);
  }
  return facts;
}

class Session {
  #address;
  #conns = new Set();
  #closing = false;
  #redialing = false;

  constructor({ address, bundle, admitEngine = false, log = () => {} }) {
    this.#address = address;
    this.bundle = bundle;
    this.admitEngine = admitEngine;
    this.log = log;
    this.conn = null; // the shared, pipelined command connection
    this.server = null;
    this.refused = null; // a redial's refusal: final
    this.reconnects = 0;
  }

  get address() {
    return this.#address;
  }

  async connect() {
    this.#closing = false;
    this.refused = null;
    this.#adopt(await this.open('emq-cmd'));
  }

  #adopt(conn) {
    this.conn = conn;
    conn.onLost = () => this.#redial(conn);
  }

  // #redial replaces the lost command connection, retrying with backoff until it succeeds,
  // the session closes, someone else replaced it, or the new connection is refused.
  async #redial(lost) {
    if (this.#redialing) return;
    this.#redialing = true;
    try {
      for (let attempt = 0; !this.#closing && this.conn === lost; attempt++) {
        if (attempt > 0) {
          const d = Math.min(10 * 2 ** Math.min(attempt, 16), 1000);
          await new Promise((r) => setTimeout(r, d / 2 + Math.random() * (d / 2)).unref());
          if (this.#closing || this.conn !== lost) return;
        }
        try {
          const conn = await this.open('emq-cmd');
          if (this.#closing || this.conn !== lost) {
            this.release(conn);
            return;
          }
          this.#conns.delete(lost);
          this.#adopt(conn);
          this.reconnects++;
          this.log(`session: reconnected (attempt ${attempt + 1})`);
          return;
        } catch (err) {
          // A server that cannot serve yet (loading its AOF after a restart, …) is retried.
          const transient = err instanceof errors.ServerError && TRANSIENT.includes(err.code);
          if (!(err instanceof errors.ConnectionError) && !transient) {
            this.refused = err;
            this.log(`session: the server refused the new connection: ${err.message}`);
            return;
          }
        }
      }
    } finally {
      this.#redialing = false;
      // A loss met while this loop ran (the connection a reconnect opened meanwhile, lost before
      // the loop saw it replaced) found the loop busy and was dropped: it is redialled now, or
      // the session would answer INTERNAL for good (PROTOCOL.md B-282).
      const cur = this.conn;
      if (cur && cur !== lost && cur.closed && !this.#closing && !this.refused) this.#redial(cur);
    }
  }

  // open dials a new connection and fences it. Parking connections come from here too, so a
  // consumer's first command is the handshake, like every other connection's.
  async open(name) {
    const conn = await Connection.open(this.#address, { name });
    try {
      let hello;
      try {
        hello = await conn.send('HELLO', '2');
      } catch (err) {
        if (err instanceof errors.ConnectionError) throw err;
        if (err instanceof errors.ServerError && TRANSIENT.includes(err.code)) throw err;
        throw errors.server(`the server rejected HELLO 2: ${err.message}`);
      }
      this.server = checkServer(hello, { admitEngine: this.admitEngine, log: this.log });
      await this.#fence(conn);
    } catch (err) {
      conn.close();
      throw err;
    }
    this.#conns.add(conn);
    return conn;
  }

  async #fence(conn) {
    await this.evalsha('fence', [keys.BUNDLE], [this.bundle.version, this.bundle.digest], conn);
  }

  // evalsha runs a bundle script by SHA1 on conn (default: the command connection).
  async evalsha(name, keyList, argv, conn = this.conn) {
    if (this.refused && conn === this.conn) throw this.refused;
    const s = this.bundle.script(name);
    const cmd = ['EVALSHA', s.sha1, keyList.length, ...keyList, ...argv];
    try {
      return await conn.send(...cmd);
    } catch (err) {
      if (!(err instanceof errors.ServerError) || err.code !== 'NOSCRIPT') throw err;
    }
    const got = text(await conn.send('SCRIPT', 'LOAD', s.source));
    if (typeof got !== 'string' || got.toLowerCase() !== s.sha1) {
      throw new Error(`SCRIPT LOAD ${name}: server answered SHA1 ${got}, want ${s.sha1}`);
    }
    return conn.send(...cmd);
  }

  command(...args) {
    if (this.refused) return Promise.reject(this.refused);
    return this.conn.send(...args);
  }

  // live is the command connection for an op that sends its own reads (the morgue's pipeline);
  // after a redial's refusal it throws that refusal, which answers every op (PROTOCOL.md B-282).
  live() {
    if (this.refused) throw this.refused;
    return this.conn;
  }

  release(conn) {
    this.#conns.delete(conn);
    conn.close();
  }

  // reconnect drops every connection and opens a fresh, fenced command connection.
  async reconnect() {
    this.closeAll();
    await this.connect();
  }

  closeAll() {
    this.#closing = true;
    for (const c of this.#conns) c.close();
    this.#conns.clear();
    this.conn = null;
  }
}

module.exports = { Session, checkServer, parseVersion, versionAtLeast };
