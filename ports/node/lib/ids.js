'use strict';
// Branded ids: three capitals naming the kind, then a 64-bit snowflake in fixed-width base62.
// The alphabet is in ASCII order and the width fixed, so byte order equals snowflake order.

const errors = require('./errors');

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const WIDTH = 11;
const ID_LEN = 3 + WIDTH;
const JOB = 'JOB';
const EPOCH_MS = Date.UTC(2024, 0, 1); // snowflake milliseconds count from 2024-01-01T00:00:00Z
const MAX_U64 = (1n << 64n) - 1n;
const MAX_MS = (1n << 42n) - 1n;
const MAX_WORKER = 1023;
const MAX_SEQ = 4095;

const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DIGIT[ALPHABET.charCodeAt(i)] = i;

function validBrand(s) {
  return typeof s === 'string' && /^[A-Z]{3}$/.test(s);
}

function encode(brand, snowflake) {
  if (!validBrand(brand)) throw errors.key(`brand ${JSON.stringify(brand)}: want three capitals`);
  let n = BigInt(snowflake);
  if (n < 0n || n > MAX_U64) throw errors.arg(`snowflake ${n} is not a 64-bit unsigned value`);
  const out = new Array(WIDTH).fill('0');
  for (let i = WIDTH - 1; i >= 0 && n > 0n; i--) {
    out[i] = ALPHABET[Number(n % 62n)];
    n /= 62n;
  }
  return brand + out.join('');
}

// parse is total over strings: malformed (length, brand shape, alphabet, overflow) is EMQKEY.
function parse(id) {
  if (typeof id !== 'string' || id.length !== ID_LEN) {
    throw errors.key(`id ${JSON.stringify(id)}: want ${ID_LEN} characters`);
  }
  const brand = id.slice(0, 3);
  if (!validBrand(brand)) throw errors.key(`id ${JSON.stringify(id)}: brand must be three capitals`);
  let n = 0n;
  for (let i = 3; i < ID_LEN; i++) {
    const c = id.charCodeAt(i);
    const d = c < 128 ? DIGIT[c] : -1;
    if (d < 0) throw errors.key(`id ${JSON.stringify(id)}: character ${JSON.stringify(id[i])} outside base62`);
    n = n * 62n + BigInt(d);
  }
  if (n > MAX_U64) throw errors.key(`id ${JSON.stringify(id)}: snowflake overflows 64 bits`);
  return { brand, snowflake: n };
}

// parseJob: malformed is EMQKEY; well-formed under another brand is EMQKIND.
function parseJob(id) {
  const { brand, snowflake } = parse(id);
  if (brand !== JOB) throw errors.kind(`id ${JSON.stringify(id)}: brand ${brand}, want ${JOB}`);
  return snowflake;
}

function compose(ms, worker, seq) {
  return (BigInt(ms) << 22n) | (BigInt(worker) << 12n) | BigInt(seq);
}

function split(snowflake) {
  const n = BigInt(snowflake);
  return { ms: Number(n >> 22n), worker: Number((n >> 12n) & 1023n), seq: Number(n & 4095n) };
}

module.exports = {
  ALPHABET, WIDTH, ID_LEN, JOB, EPOCH_MS, MAX_MS, MAX_WORKER, MAX_SEQ,
  validBrand, encode, parse, parseJob, compose, split,
};
