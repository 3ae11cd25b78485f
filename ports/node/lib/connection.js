'use strict';
// One TCP connection speaking RESP2 with implicit pipelining: every command is written at once
// and its promise settles when its reply arrives, in order. A lost connection fails every
// command in flight with ConnectionError — never a silent retry, since a write may have landed —
// and tells onLost (the session redials the command connection from there). A server that falls
// silent without closing the socket (a stopped process, a dropped route) is a loss too: once the
// oldest command's reply is REPLY_GRACE_MS overdue — a blocking pop's falls due when its own
// timeout ends — the connection fails as if closed (PROTOCOL.md B-290).

const net = require('node:net');
const resp = require('./resp');
const errors = require('./errors');

// 6 s, of B-290's 10 (and past B-303's 5): a server running a long script answers nothing
// meanwhile, and a reap of 10000 leases on a loaded machine held its reply past 5 s; at 7 s a
// process kept off the CPU under CI's load (make test beside the mutant table and a 20-lane
// certification) found a silent server over 11 s after it fell silent. The reference finds a
// frozen socket within 1¼·4 + 2 s.
const REPLY_GRACE_MS = 6000;
const now = () => performance.now(); // monotonic: a wall-clock step neither fires nor holds the watch

function splitAddress(address) {
  const i = typeof address === 'string' ? address.lastIndexOf(':') : -1;
  const port = i > 0 ? Number(address.slice(i + 1)) : NaN;
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    throw errors.arg(`address ${JSON.stringify(address)}: want host:port`);
  }
  let host = address.slice(0, i);
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  return { host, port };
}

class Connection {
  #socket;
  #reader = new resp.Reader();
  #pending = [];
  #closed = null;
  #byClient = false;
  #heard = now(); // when the server last sent a byte, or the oldest command was sent
  #watch = null; // the timer that finds the oldest reply overdue
  #recheck = null; // the overdue verdict, held for one turn of the event loop
  onLost = null; // called once when the connection is lost (not when the client closes it)

  constructor(socket, name) {
    this.#socket = socket;
    this.name = name;
    socket.setNoDelay(true);
    socket.on('data', (chunk) => this.#onData(chunk));
    socket.on('error', (err) => this.#fail(new errors.ConnectionError(`${name}: ${err.message}`, err)));
    socket.on('close', () => this.#fail(new errors.ConnectionError(`${name}: connection closed`)));
  }

  static open(address, { name = 'valkey', timeoutMs = 5000 } = {}) {
    const { host, port } = splitAddress(address);
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new errors.ConnectionError(`${name}: connect to ${address} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        resolve(new Connection(socket, name));
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(new errors.ConnectionError(`${name}: connect to ${address}: ${err.message}`, err));
      });
    });
  }

  get closed() {
    return this.#closed !== null;
  }

  // send writes one command; the promise resolves with its reply value or rejects with its
  // typed error. Several sends without awaiting form a pipeline.
  send(...args) {
    return this.sendBlocking(0, ...args);
  }

  // sendBlocking is send for a command the server may hold up to blockMs before it answers.
  sendBlocking(blockMs, ...args) {
    if (this.#closed) return Promise.reject(this.#closed);
    let frame;
    try {
      frame = resp.encode(args);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      this.#push({ resolve, reject, blockMs });
      this.#socket.write(frame);
    });
  }

  // pipeline sends commands back to back in one write and settles them all.
  pipeline(commands) {
    if (this.#closed) return Promise.reject(this.#closed);
    const frames = commands.map((c) => resp.encode(c));
    const promises = commands.map(
      () => new Promise((resolve, reject) => this.#push({ resolve, reject, blockMs: 0 })),
    );
    this.#socket.write(Buffer.concat(frames));
    return Promise.allSettled(promises).then((rs) => rs.map((r) => (r.status === 'fulfilled' ? r.value : r.reason)));
  }

  close() {
    this.#byClient = true;
    this.#fail(new errors.ConnectionError(`${this.name}: closed by the client`));
    this.#socket.destroy();
  }

  #push(p) {
    this.#pending.push(p);
    if (this.#pending.length > 1) return; // the watch is on an older command
    this.#heard = now();
    this.#arm();
  }

  // #arm sets the watch for the oldest command's reply, or clears it when none is owed. The
  // watch reads #heard when it fires, so bytes of a long reply keep it off.
  #arm(held = false) {
    clearTimeout(this.#watch);
    clearImmediate(this.#recheck);
    this.#watch = null;
    this.#recheck = null;
    const head = this.#pending[0];
    if (!head || this.#closed) return;
    const due = this.#heard + head.blockMs + REPLY_GRACE_MS;
    if (now() < due) {
      this.#watch = setTimeout(() => this.#arm(), due - now());
      this.#watch.unref();
      return;
    }
    if (!held) {
      // Timers run before I/O in the event loop: after this process was kept off the CPU, the
      // reply may be waiting unread in the socket. It is read in this turn's poll phase, and
      // the verdict is given after it.
      this.#recheck = setImmediate(() => this.#arm(true));
      this.#recheck.unref();
      return;
    }
    this.#fail(new errors.ConnectionError(`${this.name}: no reply ${REPLY_GRACE_MS} ms after it fell due: the server fell silent`));
    this.#socket.destroy();
  }

  #onData(chunk) {
    this.#heard = now();
    let replies;
    try {
      replies = this.#reader.feed(chunk);
    } catch (err) {
      this.#fail(new errors.ConnectionError(`${this.name}: ${err.message}`, err));
      this.#socket.destroy();
      return;
    }
    for (const r of replies) {
      const p = this.#pending.shift();
      if (!p) {
        this.#fail(new errors.ConnectionError(`${this.name}: reply with no command waiting`));
        this.#socket.destroy();
        return;
      }
      if (r instanceof resp.ReplyError) p.reject(errors.fromServer(r.line));
      else p.resolve(r);
    }
    if (replies.length) this.#arm();
  }

  #fail(err) {
    if (this.#closed) return;
    this.#closed = err;
    clearTimeout(this.#watch);
    clearImmediate(this.#recheck);
    const pending = this.#pending;
    this.#pending = [];
    for (const p of pending) p.reject(err);
    if (!this.#byClient && this.onLost) this.onLost(err);
  }
}

module.exports = { Connection, splitAddress, REPLY_GRACE_MS };
