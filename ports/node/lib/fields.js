'use strict';
// The request fields' domains (contracts/PROTOCOL.md Part B, "Fields and their domains"): every
// request is held to them before the port acts. A required field absent, null anywhere, the
// wrong JSON type, an integer out of range or bad base64 is EMQARG; an empty name or id is
// EMQKEY (a non-empty bad one is left to the key builder, which refuses it before any byte).
// Absent and 0 are different inputs: an optional field takes its default only when absent.

const errors = require('./errors');

const MAX_MS = 1e14;
const EPOCH_MS = 1704067200000; // 2024-01-01T00:00:00Z, the snowflake's epoch
const MAX_CLOCK_MS = EPOCH_MS + 2 ** 42 - 1;

// Field kinds.
const INT = 'integer';
const NAME = 'name';
const ID = 'job id';
const TYPE = 'key type';
const B64 = 'base64';
const STR = 'string';
const ADDR = 'host:port';
const BOOL = 'boolean';

const req = (name, kind, lo, hi) => ({ name, kind, required: true, lo, hi });
const opt = (name, kind, lo, hi, dflt) => ({ name, kind, required: false, lo, hi, dflt });
const queue = req('queue', NAME);
const id = req('id', ID);
const token = req('token', INT, 1, MAX_MS);
const lease = req('lease_ms', INT, 1, MAX_MS);
const fenced = (...more) => [queue, id, token, ...more];

// FIELDS is the table, op by op.
const FIELDS = {
  hello: [req('valkey', ADDR), opt('minter_ttl_ms', INT, 3, 1e9), opt('cluster', BOOL, 0, 0, false)],
  mint: [req('n', INT, 0, 100000), opt('parallel', INT, 1, 1024, 1)],
  key: [queue, req('type', TYPE), { ...opt('id', ID), when: ['type', 'job'] }, { ...opt('lane', NAME), when: ['type', 'lane'] }],
  slot: [req('key', STR)],
  enqueue: [queue, req('payload_b64', B64), opt('id', ID), opt('delay_ms', INT, 0, MAX_MS, 0), opt('lane', NAME)],
  claim: [queue, lease],
  lane_claim: [queue, lease],
  extend: fenced(lease),
  complete: fenced(),
  retry: fenced(req('max_attempts', INT, 1, 1e9), req('delay_ms', INT, 0, MAX_MS), req('error', STR)),
  fail: fenced(req('error', STR)),
  checkpoint: fenced(req('data_b64', B64)),
  reap: [queue, req('max_attempts', INT, 1, 1e9), opt('limit', INT, 1, 10000, 1000)],
  promote: [queue, opt('limit', INT, 1, 10000, 1000)],
  morgue: [queue, opt('limit', INT, 1, 10000, 100)],
  revive: [queue, id],
  purge: [queue, id],
  pause: [queue],
  resume: [queue],
  lane_pause: [queue, req('lane', NAME)],
  lane_resume: [queue, req('lane', NAME)],
  lane_ceiling: [queue, req('lane', NAME), req('ceiling', INT, 0, 1e9)],
  park: [queue, req('consumers', INT, 1, 256), req('jobs', INT, 0, 100000), req('lease_ms', INT, 3, MAX_MS),
    req('park_ms', INT, 1, 3600000), req('timeout_ms', INT, 1, 3600000)],
  reconnect: [],
  close: [],
  clock: [{ ...opt('set_ms', INT, EPOCH_MS, MAX_CLOCK_MS, 0), zero: true }, opt('scale', INT, 1, 1e6, 1)],
};

// B64_BODY is the alphabet; the length and the padding are checked apart. A single regular
// expression of four-character groups (the obvious one) overflows V8's stack on a payload of a
// few MiB, which PROTOCOL.md B-281 says a port must take.
const B64_BODY = /^[A-Za-z0-9+/]*$/;

// isB64 says whether v is standard base64 with its padding and nothing else.
function isB64(v) {
  if (v.length % 4 !== 0) return false;
  const pad = v.endsWith('==') ? 2 : v.endsWith('=') ? 1 : 0;
  return B64_BODY.test(v.slice(0, v.length - pad));
}

// shape holds one present value to its field's JSON type (and a base64 field to its alphabet):
// a request whose shape is wrong is EMQARG whatever else is wrong with it (Part B, "Order").
function shape(op, f, v) {
  const where = `${op}: ${f.name}`;
  if (v === null) throw errors.arg(`${where} is null`);
  switch (f.kind) {
    case INT:
      if (typeof v !== 'number' || !Number.isInteger(v)) throw errors.arg(`${where} ${JSON.stringify(v)}: want an integer`);
      return;
    case BOOL:
      if (typeof v !== 'boolean') throw errors.arg(`${where} ${JSON.stringify(v)}: want true or false`);
      return;
    default:
      if (typeof v !== 'string') throw errors.arg(`${where} ${JSON.stringify(v)}: want a string`);
  }
  if (f.kind === B64 && !isB64(v)) throw errors.arg(`${where} is not standard padded base64`);
}

// domain holds a value of the right shape to its field's range: an integer out of range or an
// empty host:port is EMQARG, an empty name or id EMQKEY (a non-empty bad one is left to the key
// builder, which refuses it before any byte).
function domain(op, f, v) {
  const where = `${op}: ${f.name}`;
  if (f.kind === INT) {
    if (v === 0 && f.zero) return;
    if (v < f.lo || v > f.hi) throw errors.arg(`${where} ${v}: want ${f.lo}..${f.hi}`);
  }
  if (f.kind === ADDR && v === '') throw errors.arg(`${where} is empty: want host:port`);
  if ((f.kind === NAME || f.kind === ID || f.kind === TYPE) && v === '') throw errors.key(`${where} is empty`);
}

// check holds request r of op to the table and returns it with every absent default filled in:
// every field's shape first, then every field's domain.
function check(op, r) {
  const out = { ...r };
  const present = [];
  for (const f of FIELDS[op] ?? []) {
    if (!Object.prototype.hasOwnProperty.call(r, f.name)) {
      const needed = f.required || (f.when && r[f.when[0]] === f.when[1]);
      if (needed) throw errors.arg(`${op}: missing required field ${f.name}`);
      if (f.dflt !== undefined) out[f.name] = f.dflt;
      continue;
    }
    shape(op, f, r[f.name]);
    present.push(f);
  }
  for (const f of present) domain(op, f, r[f.name]);
  if (op === 'mint' && out.n * out.parallel > 100000) {
    throw errors.arg(`mint: n ${out.n} × parallel ${out.parallel} is over 100000 ids`);
  }
  return out;
}

module.exports = { FIELDS, check };
