'use strict';
// RESP2 on the wire: the command encoder and a one-pass, resumable reply reader. The reader
// never rescans bytes it has consumed: a reply cut by a TCP boundary resumes where it stopped
// (an unfinished array keeps its filled slots, an unfinished bulk waits for exactly its length).

const CRLF = Buffer.from('\r\n');

// ReplyError is a RESP error reply as a value (`-TYPE message`); the connection turns it into a
// typed error for the command that got it.
class ReplyError {
  constructor(line) {
    this.line = line;
  }
}

function encode(args) {
  const parts = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    let b;
    if (Buffer.isBuffer(a)) b = a;
    else if (typeof a === 'string') b = Buffer.from(a, 'utf8');
    else if (typeof a === 'number' || typeof a === 'bigint') {
      if (typeof a === 'number' && !Number.isInteger(a)) throw new TypeError(`RESP argument ${a} is not an integer`);
      b = Buffer.from(String(a));
    } else throw new TypeError(`RESP argument of type ${typeof a}`);
    parts.push(Buffer.from(`$${b.length}\r\n`), b, CRLF);
  }
  return Buffer.concat(parts);
}

class ProtocolError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ProtocolError';
  }
}

const MAX_BULK = 512 * 1024 * 1024;

class Reader {
  constructor() {
    this.buf = Buffer.alloc(0);
    this.pos = 0;
    this.stack = []; // open arrays: { items, want }
    this.bulk = null; // an unfinished bulk: { len, chunks, have }
  }

  // feed takes the next bytes off the socket and returns every reply they complete, in order.
  feed(chunk) {
    const out = [];
    if (this.bulk) {
      const b = this.bulk;
      b.chunks.push(chunk);
      b.have += chunk.length;
      if (b.have < b.len + 2) return out;
      const all = Buffer.concat(b.chunks, b.have);
      this.bulk = null;
      if (all[b.len] !== 13 || all[b.len + 1] !== 10) throw new ProtocolError('bulk string not terminated by CRLF');
      this.buf = all;
      this.pos = b.len + 2;
      this.#emit(Buffer.from(all.subarray(0, b.len)), out);
    } else if (this.pos >= this.buf.length) {
      this.buf = chunk;
      this.pos = 0;
    } else {
      this.buf = Buffer.concat([this.buf.subarray(this.pos), chunk]);
      this.pos = 0;
    }
    for (;;) {
      const buf = this.buf;
      const start = this.pos;
      if (start >= buf.length) break;
      const eol = buf.indexOf(CRLF, start + 1);
      if (eol < 0) break;
      const type = buf[start];
      const line = buf.toString('latin1', start + 1, eol);
      const next = eol + 2;
      switch (type) {
        case 0x2b: // '+'
          this.pos = next;
          this.#emit(buf.toString('utf8', start + 1, eol), out);
          break;
        case 0x2d: // '-'
          this.pos = next;
          this.#emit(new ReplyError(buf.toString('utf8', start + 1, eol)), out);
          break;
        case 0x3a: // ':'
          this.pos = next;
          this.#emit(parseInteger(line), out);
          break;
        case 0x24: { // '$'
          const len = parseLength(line);
          if (len < 0) {
            this.pos = next;
            this.#emit(null, out);
            break;
          }
          if (len > MAX_BULK) throw new ProtocolError(`bulk length ${len} too large`);
          if (buf.length - next < len + 2) {
            // Keep what arrived; later chunks are appended without rescanning.
            const rest = buf.subarray(next);
            this.bulk = { len, chunks: [rest], have: rest.length };
            this.buf = Buffer.alloc(0);
            this.pos = 0;
            return out;
          }
          if (buf[next + len] !== 13 || buf[next + len + 1] !== 10) throw new ProtocolError('bulk string not terminated by CRLF');
          this.pos = next + len + 2;
          this.#emit(Buffer.from(buf.subarray(next, next + len)), out);
          break;
        }
        case 0x2a: { // '*'
          const n = parseLength(line);
          this.pos = next;
          if (n < 0) this.#emit(null, out);
          else if (n === 0) this.#emit([], out);
          else this.stack.push({ items: [], want: n });
          break;
        }
        default:
          throw new ProtocolError(`unexpected RESP type byte 0x${type.toString(16)}`);
      }
    }
    return out;
  }

  #emit(value, out) {
    let v = value;
    while (this.stack.length > 0) {
      const top = this.stack[this.stack.length - 1];
      top.items.push(v);
      if (top.items.length < top.want) return;
      this.stack.pop();
      v = top.items;
    }
    out.push(v);
  }
}

function parseLength(line) {
  if (!/^(-1|0|[1-9][0-9]{0,9})$/.test(line)) throw new ProtocolError(`bad length ${JSON.stringify(line)}`);
  return Number(line);
}

function parseInteger(line) {
  if (!/^-?[0-9]{1,19}$/.test(line)) throw new ProtocolError(`bad integer ${JSON.stringify(line)}`);
  const n = Number(line);
  return Number.isSafeInteger(n) ? n : BigInt(line);
}

module.exports = { encode, Reader, ReplyError, ProtocolError };
