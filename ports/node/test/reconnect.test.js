'use strict';
// The bus rides through a lost connection: commands fail at once (ConnectionError), the session
// redials and fences by itself, and a refusal of the new connection is final and typed. Needs
// a Valkey 8.1 at EMQ_VALKEY_ADDR (skipped without one).

const test = require('node:test');
const assert = require('node:assert');
const { Bus } = require('../lib/bus');
const { Connection } = require('../lib/connection');
const errors = require('../lib/errors');

const addr = process.env.EMQ_VALKEY_ADDR;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// settles waits for p, failing if it has not settled after a minute: a guard against a hang only.
async function settles(p, what) {
  let timer;
  const hang = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} never settled: a hang`)), 60000);
  });
  try {
    return await Promise.race([p, hang]);
  } finally {
    clearTimeout(timer);
  }
}

async function until(what, f, ms = 60000) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      if (await f()) return;
    } catch {}
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

test('reconnects by itself after CLIENT KILL, and a changed bundle is a final refusal', { skip: !addr }, async () => {
  const admin = await Connection.open(addr, { name: 'admin' });
  const q = `reconnect-${process.pid}`;
  const bus = await Bus.connect(addr);
  try {
    await bus.enqueue(q, 'one');
    await admin.send('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    // In flight or at once: a typed, retriable error, never a hang. A hang is told by the
    // enqueue not settling before the test's own guard, not by a clock on how long it took (a
    // busy machine takes what it takes).
    await settles(bus.enqueue(q, 'two').catch((err) => assert.ok(err instanceof errors.ConnectionError, String(err))), 'the enqueue after the kill');
    await until('the redial', async () => (await bus.enqueue(q, 'three')) && true);
    assert.ok(bus.session.reconnects >= 1, 'no reconnect counted');
    // After a restart into another bundle, the new connection is refused: final and typed.
    const [version, digest] = await admin.send('HMGET', '{emq}:bundle', 'version', 'digest');
    await admin.send('HSET', '{emq}:bundle', 'digest', '0'.repeat(40));
    await admin.send('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    await until('the refusal', async () => {
      try {
        await bus.enqueue(q, 'four');
        return false;
      } catch (err) {
        return err instanceof errors.EmqError && err.type === 'EMQVERSION';
      }
    });
    await admin.send('HSET', '{emq}:bundle', 'version', version, 'digest', digest);
  } finally {
    await bus.close().catch(() => {});
    await admin.send('DEL', `emq:{${q}}:pending`, `emq:{${q}}:wake`).catch(() => {});
    admin.close();
  }
});
