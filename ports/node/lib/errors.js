'use strict';
// Typed errors. Canon refusals carry their type (the first word of the server's error, or the
// type the client-side builder raised) so callers branch on err.type, never on message text.

const CANON = Object.freeze(['EMQSTALE', 'EMQVERSION', 'EMQSERVER', 'EMQKIND', 'EMQKEY', 'EMQARG']);

class EmqError extends Error {
  constructor(type, message) {
    super(`${type} ${message}`);
    this.name = 'EmqError';
    this.type = type;
    this.detail = message;
  }
}

// ServerError is a RESP error whose first word is not a canon type (NOSCRIPT, ERR, WRONGTYPE…).
class ServerError extends Error {
  constructor(line) {
    super(line);
    this.name = 'ServerError';
    const sp = line.indexOf(' ');
    this.code = sp < 0 ? line : line.slice(0, sp);
  }
}

// ConnectionError: the socket closed or failed; every command in flight fails with it.
class ConnectionError extends Error {
  constructor(message, cause) {
    super(message, cause ? { cause } : undefined);
    this.name = 'ConnectionError';
  }
}

// fromServer turns a RESP error line into the typed error it names.
function fromServer(line) {
  const sp = line.indexOf(' ');
  const first = sp < 0 ? line : line.slice(0, sp);
  if (CANON.includes(first)) return new EmqError(first, sp < 0 ? '' : line.slice(sp + 1));
  return new ServerError(line);
}

const stale = (m) => new EmqError('EMQSTALE', m);
const key = (m) => new EmqError('EMQKEY', m);
const kind = (m) => new EmqError('EMQKIND', m);
const arg = (m) => new EmqError('EMQARG', m);
const server = (m) => new EmqError('EMQSERVER', m);
const version = (m) => new EmqError('EMQVERSION', m);

module.exports = { CANON, EmqError, ServerError, ConnectionError, fromServer, stale, key, kind, arg, server, version };
