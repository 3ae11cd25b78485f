'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const ids = require('../lib/ids');
const { Minter, MinterLostError } = require('../lib/minter');

const expectType = (type) => (err) => err.type === type;

test('the canon vector: 274557032793636864 under USR', () => {
  assert.equal(ids.encode('USR', 274557032793636864n), 'USR0KHTOWnGLuC');
  assert.deepEqual(ids.parse('USR0KHTOWnGLuC'), { brand: 'USR', snowflake: 274557032793636864n });
});

test('encode is fixed width and round-trips at the edges', () => {
  for (const n of [0n, 1n, 61n, 62n, 1n << 22n, (1n << 63n) + 5n, (1n << 64n) - 1n]) {
    const id = ids.encode('JOB', n);
    assert.equal(id.length, 14);
    assert.equal(ids.parseJob(id), n);
  }
  assert.equal(ids.encode('JOB', 0n), 'JOB00000000000');
});

test('byte order is snowflake order', () => {
  const ns = [];
  for (let i = 0n; i < 2000n; i++) ns.push(i * 7919n * 104729n * 1299709n + i);
  const enc = ns.map((n) => ids.encode('JOB', n));
  const sorted = [...enc].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  assert.deepEqual(sorted, enc);
});

test('malformed ids are EMQKEY, other brands EMQKIND', () => {
  assert.throws(() => ids.parseJob('ORD0KHTOWnGLuC'), expectType('EMQKIND'));
  for (const bad of ['JOB0KHTOWnGLu', 'JOB0KHTOWnGLuCC', 'JOB0KHTOWnGL-C', 'job0KHTOWnGLuC', 'JOB0KHTOWnGLu\u00e9', '', 42, null,
    'JOBzzzzzzzzzzz' /* above 2^64-1 */]) {
    assert.throws(() => ids.parseJob(bad), expectType('EMQKEY'), String(bad));
  }
});

test('compose and split the snowflake fields', () => {
  const n = ids.compose(123456789, 1023, 4095);
  assert.deepEqual(ids.split(n), { ms: 123456789, worker: 1023, seq: 4095 });
});

// A fake server for the lease: a map with NX and IFEQ semantics, no clock.
function fakeLeases() {
  const held = new Map();
  const calls = [];
  const exec = async (...a) => {
    calls.push(a);
    const [cmd, key, val, mode, cmpOrPx] = a;
    if (cmd === 'GET') return held.get(key) ?? null;
    assert.equal(cmd, 'SET');
    if (mode === 'NX') {
      if (held.has(key)) return null;
      held.set(key, val);
      return 'OK';
    }
    if (mode === 'IFEQ') {
      if (held.get(key) !== cmpOrPx) return null;
      return 'OK';
    }
    throw new Error(`unexpected ${a}`);
  };
  return { held, calls, exec };
}

test('minter: strictly increasing within a millisecond, across a clock step back, past 4095', async () => {
  const srv = fakeLeases();
  let clock = ids.EPOCH_MS + 1_000_000;
  const m = new Minter({ exec: srv.exec, now: () => clock, ttlMs: 1e12 });
  await m.acquire();
  const got = [];
  for (let i = 0; i < 4095; i++) got.push(await m.next());
  clock -= 500; // the clock steps back: minting goes on from the last millisecond
  got.push(await m.next());
  assert.deepEqual(ids.split(ids.parseJob(got.at(-1))).seq, 4095);
  // the 4097th id in one (logical) millisecond must wait for the next one
  let waited = false;
  setTimeout(() => { waited = true; clock += 501; }, 20);
  got.push(await m.next());
  assert.ok(waited, 'the minter did not wait for the next millisecond');
  for (let i = 1; i < got.length; i++) assert.ok(got[i - 1] < got[i], `${got[i - 1]} !< ${got[i]}`);
  const last = ids.split(ids.parseJob(got.at(-1)));
  assert.equal(last.ms, 1_000_001);
  assert.equal(last.seq, 0);
  assert.equal(last.worker, m.worker);
  m.stop();
});

test('minter: leases a free worker id, never a taken one', async () => {
  const srv = fakeLeases();
  const a = new Minter({ exec: srv.exec, ttlMs: 1e9 });
  const b = new Minter({ exec: srv.exec, ttlMs: 1e9 });
  await a.acquire();
  await b.acquire();
  assert.notEqual(a.worker, b.worker);
  assert.equal(srv.held.get(`{emq}:minter:${a.worker}`), a.owner);
  a.stop();
  b.stop();
});

test('minter: one pipelined read of the leases, then SET NX only where a lease was free', async () => {
  const srv = fakeLeases();
  for (let w = 0; w <= ids.MAX_WORKER; w++) if (w !== 613) srv.held.set(`{emq}:minter:${w}`, 'someone-else');
  const m = new Minter({ exec: srv.exec, ttlMs: 1e9 });
  await m.acquire();
  assert.equal(m.worker, 613);
  const sets = srv.calls.filter((a) => a[0] === 'SET');
  assert.deepEqual(sets.map((a) => a[1]), ['{emq}:minter:613']);
  assert.equal(srv.calls.filter((a) => a[0] === 'GET').length, ids.MAX_WORKER + 1);
  srv.held.set('{emq}:minter:613', 'someone-else');
  await assert.rejects(new Minter({ exec: srv.exec, ttlMs: 1e9 }).acquire(), /all 1024 worker ids are leased/);
  m.stop();
});

test('minter: concurrent reaffirms after a loss lease one worker id between them', async () => {
  const srv = fakeLeases();
  const m = new Minter({ exec: srv.exec, ttlMs: 1e9 });
  await m.acquire();
  srv.held.set(`{emq}:minter:${m.worker}`, 'someone-else');
  const got = await Promise.all([m.reaffirm(), m.reaffirm(), m.reaffirm()]);
  assert.equal(new Set(got).size, 1);
  assert.equal([...srv.held.values()].filter((o) => o === m.owner).length, 1);
  m.stop();
});

test('minter: a lost lease stops minting', async () => {
  const srv = fakeLeases();
  const m = new Minter({ exec: srv.exec, ttlMs: 1e9 });
  await m.acquire();
  await m.next();
  srv.held.set(`{emq}:minter:${m.worker}`, 'someone-else');
  assert.equal(await m.renew(), false);
  await assert.rejects(m.next(), MinterLostError);
  m.stop();
});

test('minter: an expired local lease window stops minting', async () => {
  const srv = fakeLeases();
  let clock = ids.EPOCH_MS + 5000;
  const m = new Minter({ exec: srv.exec, now: () => clock, mono: () => clock, ttlMs: 30 });
  await m.acquire();
  await m.next();
  clock += 30;
  await assert.rejects(m.next(), MinterLostError);
  m.stop();
});

test('minter: a renewal sent after the lease ran out by our clock does not revive it', async () => {
  const srv = fakeLeases();
  let clock = ids.EPOCH_MS + 5000;
  let lateBy = 0; // how far the clock moves while a renewal is in flight
  const exec = async (...a) => {
    const r = await srv.exec(...a);
    clock += lateBy;
    return r;
  };
  const m = new Minter({ exec, now: () => clock, mono: () => clock, ttlMs: 30 });
  const w = await m.acquire();
  lateBy = 40;
  assert.equal(await m.renew(), true, 'a renewal sent in time is kept');
  await assert.rejects(m.next(), MinterLostError, 'its OK came 40 ms late: the 30 ms it gives ran out meanwhile');
  lateBy = 0;
  assert.equal(await m.renew(), false, 'a renewal sent after the lease ran out revived it');
  await assert.rejects(m.next(), MinterLostError);
  assert.equal(srv.held.get(`{emq}:minter:${w}`), m.owner, 'the server kept the key all along');
  m.stop();
});
