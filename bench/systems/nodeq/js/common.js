// Helpers the Node.js systems share.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { performance } = require('node:perf_hooks');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// untilZero polls count (a query answering one row with a column n) every millisecond once
// ready() holds, and resolves with the instant it first answered 0: the system's own record
// that every job is done, as the bench reads the bus's from the server.
async function untilZero(pool, text, values, ready) {
  for (;;) {
    await sleep(1);
    if (!ready()) continue;
    const r = await pool.query(text, values);
    if (Number(r.rows[0].n) === 0) return performance.now();
  }
}

// inTx runs fn(client) in one transaction on a client of pool.
async function inTx(pool, fn) {
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    await fn(c);
    await c.query('COMMIT');
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    c.release();
  }
}

// version reads a package's version from its package.json on NODE_PATH (some packages do not
// export ./package.json to require()).
const version = (pkg) => {
  for (const dir of (process.env.NODE_PATH || '').split(path.delimiter)) {
    const f = path.join(dir, pkg, 'package.json');
    if (fs.existsSync(f)) return JSON.parse(fs.readFileSync(f, 'utf8')).version;
  }
  return 'unknown';
};

module.exports = { sleep, untilZero, inTx, version };
